package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestRestartMidLoad stops a node while half its documents are claimed and
// stuck (as if their worker hung), starts it again on the same data dir, and
// requires every document to end exactly once, the stuck ones re-claimed
// with their earlier claims fenced off, and the views equal to a rebuild.
func TestRestartMidLoad(t *testing.T) {
	t.Parallel()
	const n = 24
	stuck := func(ctx context.Context, item eventstore.WorkItem) {
		var i int
		fmt.Sscanf(item.FileName, "inv-%d.txt", &i)
		if i%2 == 1 {
			<-ctx.Done() // hold the claim until the node goes down
		}
	}
	// Enough worker slots that the stuck half cannot starve the rest.
	tn := setup(t, func(c *Config) { c.afterClaim, c.WorkerConcurrency = stuck, n })
	for i := range n {
		if _, code := tn.upload("restart", fmt.Sprintf("inv-%02d.txt", i), textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload %d: %d", i, code)
		}
	}
	if code := tn.do("POST", "/v1/batches/restart/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	b := tn.waitBatch("restart", func(b batchView) bool {
		return b.Counts["succeeded"] == n/2 && b.Counts["processing"] == n/2
	})
	t.Logf("before restart: %+v", b.Counts)

	tn.stop()
	tn.cfg.afterClaim = nil
	tn.start()

	b = tn.waitBatch("restart", func(b batchView) bool { return b.AllDone })
	if b.Counts["succeeded"] != n || b.Total != n {
		t.Fatalf("after restart: %+v", b)
	}
	// From the log: each document has one accepted terminal event, and the
	// stuck ones were claimed twice.
	recs := tn.orgLog()
	docs, terminal := foldLog(recs)
	claims := map[string]int{}
	for _, rec := range recs {
		if ps, ok := rec.Event.(*domain.ProcessingStarted); ok {
			claims[ps.DocumentID]++
		}
	}
	reclaimed := 0
	for id, d := range docs {
		if terminal[id] != 1 || d.Status != domain.StatusSucceeded {
			t.Errorf("%s (%s): %d terminal transitions, status %s", id, d.FileName, terminal[id], d.Status)
		}
		var i int
		fmt.Sscanf(d.FileName, "inv-%d.txt", &i)
		if i%2 == 1 {
			if claims[id] < 2 {
				t.Errorf("%s was stuck but claimed %d times", d.FileName, claims[id])
			}
			reclaimed++
		}
		if !strings.HasPrefix(d.FileName, "inv-") {
			t.Errorf("unexpected document %s", d.FileName)
		}
	}
	if len(docs) != n || reclaimed != n/2 {
		t.Fatalf("%d documents, %d re-claimed", len(docs), reclaimed)
	}
	tn.verify()
}

// TestStopLeavesTheBlobStoreNothingToRecover: a node that stops closes its
// blob store, which makes what its journal held durable and removes its
// temporary directory, so the next start recovers nothing, and starts. An
// S3 store has neither.
func TestStopLeavesTheBlobStoreNothingToRecover(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	doc, code := tn.upload("closing", "inv.txt", textInvoice(1), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	tn.stop()
	tmp := filepath.Join(tn.cfg.blobDir(), "tmp")
	left, err := os.ReadDir(tmp)
	if tn.cfg.BlobStore == "" && (err != nil || len(left) != 0) {
		t.Fatalf("left in %s after stop: %v, %v", tmp, left, err)
	}
	tn.start()
	var got docView
	if code := tn.get("/v1/documents/"+doc.ID, &got); code != http.StatusOK || got.ID != doc.ID {
		t.Fatalf("after restart: %d %+v", code, got)
	}
}
