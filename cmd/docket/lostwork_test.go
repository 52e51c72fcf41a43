package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/internal/kafkatest"
)

// unworked starts a node without a worker whose duties check for lost
// work every 50 ms, processes a batch of docs documents on it, and waits
// until their work items are on the work topic, unread.
func unworked(t *testing.T, batch string, docs int) *testNode {
	t.Helper()
	blobs := t.TempDir()
	api := setup(t, func(c *Config) {
		c.Roles, c.BlobDir, c.LostWorkCheck = "api,projections,duties", blobs, 50*time.Millisecond
	})
	for i := range docs {
		if _, code := api.upload(batch, "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	if code := api.do("POST", "/v1/batches/"+batch+"/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	adm := api.admin()
	api.waitFor(func() bool { _, n := workEnds(t, adm, api.n.store.WorkTopic()); return n == int64(docs) })
	return api
}

// workEnds is where the work topic's partitions end, and their sum: the
// items ever appended to the topic as it is.
func workEnds(t *testing.T, adm *kadm.Client, topic string) (kadm.ListedOffsets, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
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

// redispatched is the node's docket_work_redispatched_total.
func (tn *testNode) redispatched() float64 {
	v, _ := metricValue(tn.scrape(), "docket_work_redispatched_total", nil)
	return v
}

// workedAfterAll starts a worker-only node and requires that it processes
// every document of batch, that the work topic then holds items, and
// that the node counted docs documents dispatched again.
func (tn *testNode) workedAfterAll(batch string, docs int, adm *kadm.Client, items int64) {
	t := tn.t
	t.Helper()
	startWorker(t, tn)
	b := tn.waitBatch(batch, func(b batchView) bool { return b.AllDone })
	if b.Counts["succeeded"] != docs {
		t.Fatalf("batch after its work items were lost = %+v, want %d succeeded", b, docs)
	}
	// Until the worker ran, every check (one per 50 ms) still saw the
	// loss: the documents were dispatched again once, not once a check.
	tn.waitWorkDrained()
	if _, n := workEnds(t, adm, tn.n.store.WorkTopic()); n != items {
		t.Fatalf("the work topic holds %d items, want %d", n, items)
	}
	if v := tn.redispatched(); v != float64(docs) {
		t.Fatalf("docket_work_redispatched_total = %v, want %d", v, docs)
	}
}

// TestQueuedDocumentsOutliveDeletedWorkItems processes a batch while no
// worker runs, and deletes its work items unread, as the work topic's
// retention does to workers stopped for longer than it. The documents
// are queued in the log, and their DocumentQueued events were dispatched
// and committed: without the duties' check they would stay queued for
// good. The duties must dispatch them again, once, and a worker that
// starts later must process them.
func TestQueuedDocumentsOutliveDeletedWorkItems(t *testing.T) {
	t.Parallel()
	const docs = 3
	api := unworked(t, "lost", docs)
	adm := api.admin()
	ends, _ := workEnds(t, adm, api.n.store.WorkTopic())
	deleted, err := adm.DeleteRecords(context.Background(), ends.Offsets())
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	api.waitFor(func() bool { _, n := workEnds(t, adm, api.n.store.WorkTopic()); return n >= 2*docs })
	// The duties count the documents just after their items are appended.
	api.waitFor(func() bool { return api.redispatched() >= docs })
	// The topic holds the docs dispatched and, once, the same again.
	api.workedAfterAll("lost", docs, adm, 2*docs)
}

// TestQueuedDocumentsOutliveARecreatedWorkTopic processes a batch while no
// worker runs, then deletes the work topic, as an operator purging it
// would, and restarts the node, which creates it again. The unread items
// went with the old topic, and with it the workers' offsets: the new topic
// starts at 0, so no offset shows the loss. The layout does (an earlier
// topic id), and the duties must dispatch the queued documents again,
// once, for a worker that starts later.
func TestQueuedDocumentsOutliveARecreatedWorkTopic(t *testing.T) {
	t.Parallel()
	const docs = 3
	api := unworked(t, "purged", docs)
	if _, replaced := api.n.store.WorkTopicReplaced(); replaced {
		t.Fatal("WorkTopicReplaced before the work topic was deleted")
	}
	adm, topic := api.admin(), api.n.store.WorkTopic()
	kafkatest.DeleteTopic(t, adm, topic)
	api.stop()
	api.start()
	if _, replaced := api.n.store.WorkTopicReplaced(); !replaced {
		t.Fatal("WorkTopicReplaced after the work topic was created again: false")
	}
	api.waitFor(func() bool { return api.redispatched() >= docs })
	// The new topic holds the docs dispatched again, once. A new admin
	// client: an embedded broker moves when its node restarts.
	api.workedAfterAll("purged", docs, api.admin(), docs)
}
