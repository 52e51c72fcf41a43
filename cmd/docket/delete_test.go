package main

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestDeleteHeldWorker: with the worker held, DELETE cancels every queued
// document; the claims that arrive afterwards are recorded no-ops.
func TestDeleteHeldWorker(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	tn := setup(t, func(c *Config) { c.holdWorker = hold })
	var ids []string
	for i := range 3 {
		d, code := tn.upload("doomed", fmt.Sprintf("inv-%d.txt", i), textInvoice(i), "")
		if code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
		ids = append(ids, d.ID)
	}
	if code := tn.do("POST", "/v1/batches/doomed/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	var del struct {
		Deleted bool           `json:"deleted"`
		Counts  map[string]int `json:"counts"`
	}
	if code := tn.do("DELETE", "/v1/batches/doomed", nil, "", nil, &del); code != http.StatusAccepted || !del.Deleted || del.Counts["canceled"] != 3 {
		t.Fatalf("delete: %d %+v", code, del)
	}
	var env errorView
	if code := tn.get("/v1/batches/doomed", &env); code != http.StatusNotFound || env.Error.Code != "not_found" {
		t.Fatalf("GET deleted batch: %d %+v", code, env)
	}
	noops := tn.n.views.Noops()
	close(hold)
	// Whatever the dispatcher sent before the delete is now claimed by the
	// worker; each such claim meets a canceled document: a recorded no-op.
	tn.waitWorkDrained()
	claims := 0
	for _, rec := range tn.orgLog() {
		if _, ok := rec.Event.(*domain.ProcessingStarted); ok {
			claims++
		}
	}
	tn.waitFor(func() bool { return tn.n.views.Noops() >= noops+int64(claims) })
	for _, id := range ids {
		var d docView
		if code := tn.get("/v1/documents/"+id, &d); code != http.StatusOK || d.Status != "canceled" || d.CompletedAt == nil || d.StartedAt != nil {
			t.Fatalf("document after delete: %d %+v", code, d)
		}
	}
	tn.verify()
}

// TestDeleteRacingWorker deletes a batch while the worker is claiming its
// documents. Each document must end in exactly the state log order decides:
// claimed before the BatchDeleted event -> it finishes; otherwise canceled.
func TestDeleteRacingWorker(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	const n = 40
	for i := range n {
		if _, code := tn.upload("race", fmt.Sprintf("inv-%d.txt", i), textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	if code := tn.do("POST", "/v1/batches/race/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	// Delete once the worker is under way, so that both outcomes can occur.
	tn.waitBatch("race", func(b batchView) bool { return b.Counts["processing"]+b.Counts["succeeded"] > 0 })
	if code := tn.do("DELETE", "/v1/batches/race", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("delete: %d", code)
	}
	// Wait until no document is running, by reading the log until every
	// claimed document has its result.
	var recs []eventstore.Record
	tn.waitFor(func() bool { recs = tn.orgLog(); return settled(recs) })
	deletedAt := int64(-1)
	firstClaim := map[string]int64{}
	ids := map[string]bool{}
	for _, rec := range recs {
		switch ev := rec.Event.(type) {
		case *domain.DocumentUploaded:
			ids[ev.DocumentID] = true
		case *domain.BatchDeleted:
			deletedAt = rec.Offset
		case *domain.ProcessingStarted:
			if _, ok := firstClaim[ev.DocumentID]; !ok {
				firstClaim[ev.DocumentID] = rec.Offset
			}
		}
	}
	canceled, finished := 0, 0
	for id := range ids {
		var d docView
		if code := tn.get("/v1/documents/"+id, &d); code != http.StatusOK {
			t.Fatalf("GET %s: %d", id, code)
		}
		claim, claimed := firstClaim[id]
		want := "canceled"
		if claimed && claim < deletedAt {
			want = "succeeded"
		}
		if d.Status != want {
			t.Errorf("%s: status %s, log order says %s (claim at %d, delete at %d)", id, d.Status, want, claim, deletedAt)
		}
		if want == "canceled" {
			canceled++
		} else {
			finished++
		}
	}
	t.Logf("%d documents: %d finished (claimed before the delete), %d canceled", len(ids), finished, canceled)
	if finished == 0 {
		t.Fatal("the delete came after a claim, yet no document finished")
	}
	tn.verify()
}

// settled reports whether every document claimed before or after the delete
// has a result in recs, i.e. nothing is still running.
func settled(recs []eventstore.Record) bool {
	var docs = map[string]domain.Document{}
	for _, rec := range recs {
		if id := domain.DocumentIDOf(rec.Event); id != "" {
			if next, err := docs[id].Apply(rec.Event); err == nil {
				docs[id] = next
			}
		} else if bd, ok := rec.Event.(*domain.BatchDeleted); ok {
			for id, d := range docs {
				if next, err := d.Apply(bd); err == nil {
					docs[id] = next
				}
			}
		}
	}
	for _, d := range docs {
		if d.Status.Running() || d.Status == domain.StatusQueued && !d.BatchDeleted {
			return false
		}
	}
	return len(docs) > 0
}
