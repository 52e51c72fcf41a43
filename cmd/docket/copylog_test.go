package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestCopyLogOntoMorePartitions moves a stopped deployment from 4
// partitions onto 8 with docket copy-log: the node started on the copy,
// with its views rebuilt from it, must answer as before, hold every event
// of the org in the one partition the org hashes to, and go on working.
func TestCopyLogOntoMorePartitions(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	for i := range 3 {
		if _, code := tn.upload("copied", "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	tn.processAndWait("copied")
	tn.waitWorkDrained()
	later, code := tn.upload("later", "inv.txt", textInvoice(9), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	before := tn.results("copied")
	var history map[string]any
	if code := tn.get("/v1/documents/"+before.Documents[0].ID+"/history", &history); code != http.StatusOK {
		t.Fatalf("history: %d", code)
	}
	oldPrefix := tn.cfg.TopicPrefix
	tn.stop()
	events, err := tn.cli("events")
	if err != nil {
		t.Fatal(err)
	}

	to := oldPrefix + "-x8"
	out, err := tn.cli("copy-log", "--to-prefix", to, "--to-partitions", "8")
	if err != nil {
		t.Fatalf("copy-log: %v", err)
	}
	if !strings.HasPrefix(out, "copied ") || !strings.Contains(out, "(4 partitions) to "+to+".events (8 partitions)") {
		t.Fatalf("copy-log said %q", out)
	}
	copiedEvents, err := tn.cli("events", "--topic-prefix", to)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := withoutPositions(t, events), withoutPositions(t, copiedEvents); !reflect.DeepEqual(a, b) {
		t.Fatalf("docket events of the copy, without partitions and offsets:\n%v\nof the log:\n%v", b, a)
	}
	if _, err := tn.cli("copy-log", "--to-prefix", to, "--to-partitions", "8"); !errors.Is(err, errCopyRefused) {
		t.Fatalf("a second copy into the same prefix: %v, want errCopyRefused", err)
	}

	if err := os.RemoveAll(filepath.Join(tn.cfg.DataDir, "views")); err != nil {
		t.Fatal(err)
	}
	tn.cfg.TopicPrefix, tn.cfg.Partitions = to, 8
	tn.start()
	if got := tn.results("copied"); !reflect.DeepEqual(got, before) {
		t.Fatalf("results on the copy:\n%+v\nbefore:\n%+v", got, before)
	}
	var copiedHistory map[string]any
	tn.get("/v1/documents/"+before.Documents[0].ID+"/history", &copiedHistory)
	if len(copiedHistory["events"].([]any)) != len(history["events"].([]any)) {
		t.Fatalf("history on the copy: %d events, before %d", len(copiedHistory["events"].([]any)), len(history["events"].([]any)))
	}
	store := tn.n.store
	if store.Partitions() != 8 {
		t.Fatalf("the node on the copy uses %d partitions", store.Partitions())
	}
	ends, err := tn.admin().ListEndOffsets(context.Background(), store.EventsTopic())
	if err != nil {
		t.Fatal(err)
	}
	home := store.PartitionFor(domain.OrgID("default"))
	ends.Each(func(o kadm.ListedOffset) {
		if o.Partition != home && o.Offset != 0 {
			t.Errorf("partition %d of the copy holds %d events; the org's are all in %d", o.Partition, o.Offset, home)
		}
	})
	// The deployment goes on: the document uploaded before the copy is
	// processed on it, and the views equal a rebuild.
	tn.processAndWait("later")
	if d := tn.results("later").Documents; len(d) != 1 || d[0].ID != later.ID || d[0].Status != "succeeded" {
		t.Fatalf("later batch on the copy: %+v", d)
	}
	tn.verify()
}

// TestCopyLogRefusesADocumentBeingProcessed: a document a worker holds
// would have its result appended to the old log, and stay processing in
// the copy for good. A node that still runs is refused first.
func TestCopyLogRefusesADocumentBeingProcessed(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.Roles = "api,projections,duties" })
	doc, code := tn.upload("held", "inv.txt", textInvoice(0), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/held/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	org := domain.OrgID("default")
	claim := &domain.ProcessingStarted{Meta: eventstore.NewMeta(org, "worker:test", ""), DocumentID: doc.ID,
		Phase: domain.PhaseFull, Attempt: 1, ClaimID: eventstore.NewID("clm_"), Worker: "test"}
	pos, err := tn.n.store.Append(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.n.views.WaitAll(ctx, pos); err != nil {
		t.Fatal(err)
	}
	if d, err := tn.n.views.Document(org, doc.ID); err != nil || !d.Status.Running() {
		t.Fatalf("document after its claim: %v %v", d.Status, err)
	}
	to := tn.cfg.TopicPrefix + "-x"
	_, err = tn.cli("copy-log", "--to-prefix", to, "--to-partitions", "8", "--wait", "0s")
	if !errors.Is(err, errCopyRefused) || !strings.Contains(err.Error(), tn.n.store.GroupName("duties")+" has 1 members") {
		t.Fatalf("copy-log while the node runs: %v", err)
	}
	tn.stop()
	_, err = tn.cli("copy-log", "--to-prefix", to, "--to-partitions", "8")
	if !errors.Is(err, errCopyRefused) || !strings.Contains(err.Error(), "being processed") {
		t.Fatalf("copy-log with a document being processed: %v", err)
	}
	if _, err := tn.cli("copy-log", "--to-prefix", tn.cfg.TopicPrefix, "--to-partitions", "8"); err == nil {
		t.Fatal("copy-log into its own prefix succeeded")
	}
}

// TestCopyLogDispatchesQueuedDocumentsAgain copies a log whose documents
// are queued, their work items in the old prefix's work topic: the new
// deployment's duties read the copy from offset 0 and dispatch them
// again, and its worker processes them.
func TestCopyLogDispatchesQueuedDocumentsAgain(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.Roles = "api,projections,duties" })
	const docs = 2
	for i := range docs {
		if _, code := tn.upload("queued", "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	if code := tn.do("POST", "/v1/batches/queued/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	if b := tn.waitBatch("queued", func(b batchView) bool { return b.Counts["queued"] == docs }); b.AllDone {
		t.Fatalf("batch before the copy: %+v", b)
	}
	tn.stop()
	to := tn.cfg.TopicPrefix + "-x"
	if _, err := tn.cli("copy-log", "--to-prefix", to, "--to-partitions", "6"); err != nil {
		t.Fatalf("copy-log: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(tn.cfg.DataDir, "views")); err != nil {
		t.Fatal(err)
	}
	tn.cfg.TopicPrefix, tn.cfg.Partitions, tn.cfg.Roles = to, 6, ""
	tn.start()
	if b := tn.waitBatch("queued", func(b batchView) bool { return b.AllDone }); b.Counts["succeeded"] != docs {
		t.Fatalf("batch on the copy: %+v", b)
	}
}

// withoutPositions is docket events' output without each line's partition
// and offset: what a copy onto other partitions must keep, timestamps
// included. The test's log is one org's, so its order is the org's.
func withoutPositions(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("docket events line %q: %v", l, err)
		}
		delete(m, "partition")
		delete(m, "offset")
		lines = append(lines, m)
	}
	return lines
}
