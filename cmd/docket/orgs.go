package main

import (
	"context"

	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

const orgsUsage = "docket orgs create NAME | issue-key NAME [--label L] | revoke-key NAME KEY_ID  [--kafka-brokers ...|--data-dir ...] [--topic-prefix ...]"

// orgs implements `docket orgs`:
//
//	create NAME          appends OrgCreated and ApiKeyIssued and prints the key
//	issue-key NAME       appends ApiKeyIssued for an existing org and prints it
//	revoke-key NAME ID   appends ApiKeyRevoked for one of the org's keys
//
// A key is shown once; the log keeps only its hash. issue-key and
// revoke-key are the operator's way back in when an org has lost or leaked
// every key it could use with the API.
func orgs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		return usageError(orgsUsage)
	}
	cmd, name, rest := args[0], args[1], args[2:]
	var keyID string
	switch cmd {
	case "create", "issue-key":
	case "revoke-key":
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return usageError(orgsUsage)
		}
		keyID, rest = rest[0], rest[1:]
	default:
		return usageError(orgsUsage)
	}
	fs := flag.NewFlagSet("orgs "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", env("data-dir", "./docket-data"), "data dir of a node with an embedded broker (reads broker.addr)")
	brokers := fs.String("kafka-brokers", env("kafka-brokers", ""), "Kafka brokers host:port,...")
	prefix := fs.String("topic-prefix", env("topic-prefix", "docket"), "topic prefix of the deployment (as given to serve)")
	label := fs.String("label", "issued by docket orgs issue-key", "issue-key: the key's label")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if err := domain.ValidateOrgName(name); err != nil {
		return err
	}
	seeds, err := seedsFrom(*brokers, *dataDir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := eventstore.Open(ctx, seeds, eventstore.Prefix(*prefix))
	if err != nil {
		return err
	}
	defer store.Close()
	orgID := domain.OrgID(name)
	var exists bool
	keys := map[string]string{} // key id -> "issued" or "revoked"
	err = scanOrg(ctx, store, orgID, func(ev domain.Event) {
		switch e := ev.(type) {
		case *domain.OrgCreated:
			exists = exists || e.Meta.OrgID == orgID
		case *domain.ApiKeyIssued:
			if _, seen := keys[e.KeyID]; !seen && e.Meta.OrgID == orgID {
				keys[e.KeyID] = "issued"
			}
		case *domain.ApiKeyRevoked:
			if keys[e.KeyID] == "issued" && e.Meta.OrgID == orgID {
				keys[e.KeyID] = "revoked"
			}
		}
	})
	if err != nil {
		return err
	}
	switch {
	case cmd == "create" && exists:
		return fmt.Errorf("%w: %s", domain.ErrOrgExists, name)
	case cmd != "create" && !exists:
		return fmt.Errorf("no organisation %s", name)
	}
	switch cmd {
	case "create":
		key, issued := newAPIKey(orgID, "created by docket orgs create")
		if _, err := store.Append(ctx, &domain.OrgCreated{Meta: eventstore.NewMeta(orgID, "cli", ""), Name: name}, issued); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "org %s (%s)\napi key: %s\n", name, orgID, key)
	case "issue-key":
		key, issued := newAPIKey(orgID, *label)
		if _, err := store.Append(ctx, issued); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "org %s: key %s\napi key: %s\n", name, issued.KeyID, key)
	case "revoke-key":
		switch keys[keyID] {
		case "":
			return fmt.Errorf("%w: %s has no key %s", domain.ErrUnknownKey, name, keyID)
		case "issued":
			if _, err := store.Append(ctx, &domain.ApiKeyRevoked{Meta: eventstore.NewMeta(orgID, "cli", ""), KeyID: keyID}); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "org %s: key %s revoked\n", name, keyID)
	}
	return nil
}

// seedsFrom returns the external brokers, or the embedded broker's address
// recorded in the data dir.
func seedsFrom(brokers, dataDir string) ([]string, error) {
	if brokers != "" {
		return strings.Split(brokers, ","), nil
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "broker.addr"))
	if err != nil {
		return nil, fmt.Errorf("no --kafka-brokers and no running embedded broker (%w)", err)
	}
	return []string{strings.TrimSpace(string(b))}, nil
}

// scanOrg reads the org's partition (all of one org's events live there)
// from the start to its current end, handing every event to fn.
func scanOrg(ctx context.Context, store *eventstore.Store, orgID string, fn func(domain.Event)) error {
	p := store.PartitionFor(orgID)
	end, err := store.EndOffsets(ctx)
	if err != nil {
		return err
	}
	if end[p] == 0 {
		return nil
	}
	r, err := store.NewReader(map[int32]int64{p: 0})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		recs, err := r.Poll(ctx, 0)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if rec.Err == nil && rec.Event.Header().OrgID == orgID {
				fn(rec.Event)
			}
			if rec.Offset >= end[p]-1 {
				return nil
			}
		}
	}
}
