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

// orgs implements `docket orgs create NAME`: it appends OrgCreated and
// ApiKeyIssued (with the key's hash only) and prints the key, which is shown
// this once.
func orgs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "create" {
		return usageError("docket orgs create NAME [--kafka-brokers ...|--data-dir ...] [--topic-prefix ...]")
	}
	name := args[1]
	fs := flag.NewFlagSet("orgs create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", env("data-dir", "./docket-data"), "data dir of a node with an embedded broker (reads broker.addr)")
	brokers := fs.String("kafka-brokers", env("kafka-brokers", ""), "Kafka brokers host:port,...")
	prefix := fs.String("topic-prefix", env("topic-prefix", "docket"), "topic prefix of the deployment (as given to serve)")
	if err := fs.Parse(args[2:]); err != nil {
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
	exists, err := orgExists(ctx, store, orgID)
	if err != nil {
		return err
	}
	if exists {
		return fmt.Errorf("%w: %s", domain.ErrOrgExists, name)
	}
	key, issued := newAPIKey(orgID, "created by docket orgs create")
	if _, err := store.Append(ctx, &domain.OrgCreated{Meta: eventstore.NewMeta(orgID, "cli", ""), Name: name}, issued); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "org %s (%s)\napi key: %s\n", name, orgID, key)
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

// orgExists reads the org's partition (all of one org's events live there)
// looking for its OrgCreated.
func orgExists(ctx context.Context, store *eventstore.Store, orgID string) (bool, error) {
	p := store.PartitionFor(orgID)
	end, err := store.EndOffsets(ctx)
	if err != nil {
		return false, err
	}
	if end[p] == 0 {
		return false, nil
	}
	r, err := store.NewReader(map[int32]int64{p: 0})
	if err != nil {
		return false, err
	}
	defer r.Close()
	for {
		recs, err := r.Poll(ctx, 0)
		if err != nil {
			return false, err
		}
		for _, rec := range recs {
			if oc, ok := rec.Event.(*domain.OrgCreated); ok && oc.Meta.OrgID == orgID {
				return true, nil
			}
			if rec.Offset >= end[p]-1 {
				return false, nil
			}
		}
	}
}
