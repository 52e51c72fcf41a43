package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestQueuedDocumentsOutliveDeletedWorkItems processes a batch while no
// worker runs, and deletes its work items unread, as the work topic's
// retention does to workers stopped for longer than it. The documents
// are queued in the log, and their DocumentQueued events were dispatched
// and committed: without the duties' check they would stay queued for
// good. The duties must dispatch them again, once, and a worker that
// starts later must process them.
func TestQueuedDocumentsOutliveDeletedWorkItems(t *testing.T) {
	t.Parallel()
	blobs := t.TempDir()
	api := setup(t, func(c *Config) {
		c.Roles, c.BlobDir, c.LostWorkCheck = "api,projections,duties", blobs, 50*time.Millisecond
	})
	const docs = 3
	for i := range docs {
		if _, code := api.upload("lost", "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	if code := api.do("POST", "/v1/batches/lost/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	adm := api.admin()
	workEnds := func() (kadm.ListedOffsets, int64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, api.n.store.WorkTopic())
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			t.Fatalf("work topic end offsets: %v", err)
		}
		var sum int64
		ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
		return ends, sum
	}
	var ends kadm.ListedOffsets
	api.waitFor(func() bool {
		var n int64
		ends, n = workEnds()
		return n == docs
	})
	deleted, err := adm.DeleteRecords(context.Background(), ends.Offsets())
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	api.waitFor(func() bool { _, n := workEnds(); return n >= 2*docs })
	redispatched := func() float64 {
		v, _ := metricValue(api.scrape(), "docket_work_redispatched_total", nil)
		return v
	}
	// The duties count the documents just after their items are appended.
	api.waitFor(func() bool { return redispatched() >= docs })

	startWorker(t, api)
	b := api.waitBatch("lost", func(b batchView) bool { return b.AllDone })
	if b.Counts["succeeded"] != docs {
		t.Fatalf("batch after its work items were deleted = %+v, want %d succeeded", b, docs)
	}
	// Until the worker ran, every check (one per 50 ms) still saw the
	// loss: the documents were dispatched again once, not once a check.
	api.waitWorkDrained()
	if _, n := workEnds(); n != 2*docs {
		t.Fatalf("the work topic holds %d items, want %d: the %d dispatched and, once, the same again", n, 2*docs, docs)
	}
	if v := redispatched(); v != docs {
		t.Fatalf("docket_work_redispatched_total = %v, want %d", v, docs)
	}
}
