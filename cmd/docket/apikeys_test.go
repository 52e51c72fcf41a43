package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

type keyView struct {
	ID      string `json:"id"`
	Label   string `json:"label"`
	Revoked bool   `json:"revoked"`
	Key     string `json:"key"`
}

// joinNode starts a second API node on tn's broker and topics, with its own
// data dir and views.
func joinNode(t *testing.T, tn *testNode) *testNode {
	t.Helper()
	return setup(t, func(c *Config) {
		c.KafkaBrokers = strings.Join(tn.n.store.Seeds(), ",")
		c.TopicPrefix = tn.cfg.TopicPrefix
		c.Roles = "api,projections"
	})
}

// caughtUpWith blocks until other has applied everything tn has applied on
// the default org's partition: what tn answered, other has seen.
func (tn *testNode) caughtUpWith(other *testNode) {
	tn.t.Helper()
	p := tn.n.store.PartitionFor(domain.OrgID("default"))
	off := other.n.views.Offsets()[p]
	if off == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tn.n.views.WaitFor(ctx, eventstore.Position{Partition: p, Offset: off - 1}); err != nil {
		tn.t.Fatalf("views did not catch up: %v", err)
	}
}

// TestAPIKeyRevocation issues a key on one node, uses it on another, has it
// revoke itself, and requires every node to refuse it once it applied the
// revocation; keys exist in the log and the views only as hashes.
func TestAPIKeyRevocation(t *testing.T) {
	t.Parallel()
	a := setup(t)
	b := joinNode(t, a)
	bearer := func(k string) string { return "Bearer " + k }

	var k1 keyView
	a.call("POST", "/v1/api-keys", bearer(a.key), strings.NewReader(`{"label":"rotation ✓"}`), "application/json", nil).decode(t, http.StatusCreated, &k1)
	if !strings.HasPrefix(k1.Key, "dk_") || k1.ID == "" || k1.Revoked || k1.Label != "rotation ✓" {
		t.Fatalf("issued %+v", k1)
	}
	// Usable at once on the node that answered, and on the other once it
	// applied what the first one had.
	a.call("GET", "/v1/batches", bearer(k1.Key), nil, "", nil).decode(t, http.StatusOK, &map[string]any{})
	b.caughtUpWith(a)
	b.call("GET", "/v1/batches", bearer(k1.Key), nil, "", nil).decode(t, http.StatusOK, &map[string]any{})

	var list struct {
		Keys []map[string]any `json:"api_keys"`
	}
	b.call("GET", "/v1/api-keys", bearer(k1.Key), nil, "", nil).decode(t, http.StatusOK, &list)
	// Node b issued itself a key for its api-key file on first start.
	if len(list.Keys) != 3 {
		t.Fatalf("listed %v", list.Keys)
	}
	for _, k := range list.Keys {
		if _, ok := k["key"]; ok || len(k) != 3 {
			t.Fatalf("a listing shows %v", k)
		}
	}

	// The key revokes itself on node b; node a refuses it once it applied
	// what b had when it answered.
	if r := b.call("DELETE", "/v1/api-keys/"+k1.ID, bearer(k1.Key), nil, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.code, r.body)
	}
	a.caughtUpWith(b)
	for _, n := range []*testNode{a, b} {
		for _, path := range []string{"/v1/batches", "/v1/api-keys", "/v1/documents/doc_x", "/v1/jobs/job_x"} {
			n.call("GET", path, bearer(k1.Key), nil, "", nil).envelope(t, http.StatusUnauthorized, "unauthorized")
		}
		n.call("POST", "/v1/api-keys", bearer(k1.Key), nil, "", nil).envelope(t, http.StatusUnauthorized, "unauthorized")
	}
	// The revoked key shows as revoked; revoking again is the same 204 and
	// appends nothing; the default key still works.
	before := len(a.orgLog())
	if r := a.call("DELETE", "/v1/api-keys/"+k1.ID, bearer(a.key), nil, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("second revoke: %d %s", r.code, r.body)
	}
	if after := len(a.orgLog()); after != before {
		t.Fatalf("a second revoke appended %d events", after-before)
	}
	a.call("GET", "/v1/api-keys", bearer(a.key), nil, "", nil).decode(t, http.StatusOK, &list)
	revoked := 0
	for _, k := range list.Keys {
		if k["revoked"] == true {
			revoked++
		}
	}
	if revoked != 1 {
		t.Fatalf("after revoke: %v", list.Keys)
	}

	// Another org's key id answers like an unknown one, and stays valid.
	other := a.createOrg("other-keys")
	var otherKeys struct {
		Keys []keyView `json:"api_keys"`
	}
	a.call("GET", "/v1/api-keys", bearer(other), nil, "", nil).decode(t, http.StatusOK, &otherKeys)
	if len(otherKeys.Keys) != 1 {
		t.Fatalf("other org keys %+v", otherKeys)
	}
	unknown := a.call("DELETE", "/v1/api-keys/key_unknown", bearer(a.key), nil, "", nil)
	foreign := a.call("DELETE", "/v1/api-keys/"+otherKeys.Keys[0].ID, bearer(a.key), nil, "", nil)
	e1, e2 := unknown.envelope(t, http.StatusNotFound, "not_found"), foreign.envelope(t, http.StatusNotFound, "not_found")
	if e1.Error.Message != e2.Error.Message {
		t.Fatalf("unknown and foreign keys answer differently: %q vs %q", e1.Error.Message, e2.Error.Message)
	}
	a.call("GET", "/v1/batches", bearer(other), nil, "", nil).decode(t, http.StatusOK, &map[string]any{})

	// Bad bodies.
	a.call("POST", "/v1/api-keys", bearer(a.key), strings.NewReader(`{"label":"x","admin":true}`), "application/json", nil).envelope(t, http.StatusBadRequest, "invalid_request")
	a.call("POST", "/v1/api-keys", bearer(a.key), strings.NewReader(`{"label":"`+strings.Repeat("x", 101)+`"}`), "application/json", nil).envelope(t, http.StatusBadRequest, "invalid_request")
	a.call("POST", "/v1/api-keys", bearer(a.key), strings.NewReader(`{"label":"a\u0000b"}`), "application/json", nil).envelope(t, http.StatusBadRequest, "invalid_request")
	a.call("POST", "/v1/api-keys", bearer(a.key), strings.NewReader(`label=x`), "application/x-www-form-urlencoded", nil).envelope(t, http.StatusUnsupportedMediaType, "unsupported_media_type")

	// Only hashes: neither the log nor either node's views hold a secret.
	for _, rec := range a.orgLog() {
		raw, _ := json.Marshal(rec.Event)
		for _, secret := range []string{k1.Key, a.key, b.key} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Fatalf("%s in the log holds a secret", rec.Event.Type())
			}
		}
	}
	for _, n := range []*testNode{a, b} {
		it, err := n.n.views.DB().NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			for _, secret := range []string{k1.Key, a.key, b.key, other} {
				if bytes.Contains(it.Value(), []byte(secret)) || bytes.Contains(it.Key(), []byte(secret)) {
					t.Fatalf("views key %q holds a secret", it.Key())
				}
			}
		}
		it.Close()
	}
	a.verify()
	b.verify()
}

// runOrgs runs `docket orgs ...` against tn's brokers and topics.
func (tn *testNode) runOrgs(args ...string) (string, error) {
	var out, errw bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append(args, "--kafka-brokers", strings.Join(tn.n.store.Seeds(), ","), "--topic-prefix", tn.cfg.TopicPrefix)
	err := orgs(ctx, args, &out, &errw)
	return out.String(), err
}

// TestOrgsKeyCommands: the operator issues and revokes keys from the
// command line, through the log, as the API does.
func TestOrgsKeyCommands(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	first := tn.createOrg("ops")
	out, err := tn.runOrgs("issue-key", "ops", "--label", "break glass")
	if err != nil {
		t.Fatal(err)
	}
	_, second, _ := strings.Cut(out, "api key: ")
	second = strings.TrimSpace(second)
	p := tn.n.store.PartitionFor(domain.OrgID("ops"))
	waitKey := func(key string, want int) {
		t.Helper()
		tn.waitFor(func() bool {
			if tn.call("GET", "/v1/api-keys", "Bearer "+key, nil, "", nil).code == want {
				return true
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_ = tn.n.views.WaitFor(ctx, nextPosition(tn.n.views.Offsets(), p))
			return false
		})
	}
	waitKey(second, http.StatusOK)
	var list struct {
		Keys []keyView `json:"api_keys"`
	}
	tn.call("GET", "/v1/api-keys", "Bearer "+second, nil, "", nil).decode(t, http.StatusOK, &list)
	var firstID string
	for _, k := range list.Keys {
		if k.Label != "break glass" {
			firstID = k.ID
		}
	}
	if len(list.Keys) != 2 || firstID == "" {
		t.Fatalf("keys %+v", list.Keys)
	}
	if _, err := tn.runOrgs("revoke-key", "ops", firstID); err != nil {
		t.Fatal(err)
	}
	waitKey(first, http.StatusUnauthorized)
	tn.call("GET", "/v1/api-keys", "Bearer "+second, nil, "", nil).decode(t, http.StatusOK, &list)
	// Again: a no-op that says so; unknown keys, other orgs' keys and
	// unknown orgs are errors.
	if _, err := tn.runOrgs("revoke-key", "ops", firstID); err != nil {
		t.Fatalf("second revoke: %v", err)
	}
	var defKeys struct {
		Keys []keyView `json:"api_keys"`
	}
	tn.call("GET", "/v1/api-keys", "Bearer "+tn.key, nil, "", nil).decode(t, http.StatusOK, &defKeys)
	for _, id := range []string{"key_nosuch", defKeys.Keys[0].ID} {
		if _, err := tn.runOrgs("revoke-key", "ops", id); !errors.Is(err, domain.ErrUnknownKey) {
			t.Fatalf("revoke %s: %v", id, err)
		}
	}
	if _, err := tn.runOrgs("issue-key", "nosuch"); err == nil {
		t.Fatal("issue-key for an unknown org succeeded")
	}
	if _, err := tn.runOrgs("revoke-key", "ops"); err == nil {
		t.Fatal("revoke-key without an id succeeded")
	}
	tn.call("GET", "/v1/api-keys", "Bearer "+tn.key, nil, "", nil).decode(t, http.StatusOK, &defKeys)
	if defKeys.Keys[0].Revoked {
		t.Fatal("the default org's key was revoked through another org")
	}
}
