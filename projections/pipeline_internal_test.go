package projections

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// pipelineLog is four fetches, each reading what the one before wrote:
//  1. batch b1's webhook, ten uploads into b1, five into b2, and a
//     preprocess job over one more document;
//  2. b1's documents queued, claimed and preprocessed, the job's document
//     queued and claimed (its run names the job), then a webhook endpoint,
//     then b2 deleted, which iterates b2's members, written by fetch 1;
//  3. b1's documents succeed, completing b1, and the job's run ends,
//     notifying the endpoint that fetch 2 created;
//  4. the delivery of b1's batch.completed notification (deliveryOf).
func pipelineLog(t *testing.T) [][]eventstore.Record {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	m := func() domain.Meta {
		n++
		return domain.Meta{EventID: fmt.Sprintf("e%d", n), OrgID: "o1", OccurredAt: t0.Add(time.Duration(n) * time.Millisecond)}
	}
	var b1, b2 []string
	for i := range 10 {
		b1 = append(b1, fmt.Sprintf("d%02d", i))
	}
	for i := range 5 {
		b2 = append(b2, fmt.Sprintf("e%02d", i))
	}
	jobDoc := "j00"
	name1, name2 := "b1", "b2"
	var f1, f2, f3 []domain.Event
	f1 = append(f1, &domain.BatchWebhookSet{Meta: m(), BatchName: "b1", URL: "http://127.0.0.1:9/hook", Secret: "whsec_test"})
	for _, d := range b1 {
		f1 = append(f1, &domain.DocumentUploaded{Meta: m(), DocumentID: d, BatchName: &name1, FileName: "a.pdf", ContentType: "application/pdf", Size: 100, BlobKey: "k"})
	}
	for _, d := range b2 {
		f1 = append(f1, &domain.DocumentUploaded{Meta: m(), DocumentID: d, BatchName: &name2, FileName: "a.pdf", ContentType: "application/pdf", Size: 100, BlobKey: "k"})
	}
	f1 = append(f1, &domain.DocumentUploaded{Meta: m(), DocumentID: jobDoc, FileName: "a.pdf", ContentType: "application/pdf", Size: 100, BlobKey: "k"},
		&domain.JobCreated{Meta: m(), JobID: "job1", Kind: domain.JobPreprocess, DocumentIDs: []string{jobDoc}})
	for _, d := range b1 {
		f2 = append(f2, &domain.DocumentQueued{Meta: m(), DocumentID: d, Phase: domain.PhaseFull, Attempt: 1},
			&domain.ProcessingStarted{Meta: m(), DocumentID: d, Phase: domain.PhaseFull, Attempt: 1, ClaimID: "c-" + d, Worker: "w"},
			&domain.DocumentPreprocessed{Meta: m(), DocumentID: d, ClaimID: "c-" + d, ContentType: "application/pdf", Pages: 1, TextChars: 100})
	}
	f2 = append(f2, &domain.DocumentQueued{Meta: m(), DocumentID: jobDoc, Phase: domain.PhasePreprocess, Attempt: 1, JobIDs: []string{"job1"}},
		&domain.ProcessingStarted{Meta: m(), DocumentID: jobDoc, Phase: domain.PhasePreprocess, Attempt: 1, ClaimID: "c-" + jobDoc, Worker: "w"},
		&domain.WebhookEndpointCreated{Meta: m(), EndpointID: "ep1", URL: "http://127.0.0.1:9/ep", Events: domain.EndpointEvents, Secret: "whsec_ep"},
		&domain.BatchDeleted{Meta: m(), BatchName: "b2"})
	for _, d := range b1 {
		f3 = append(f3, &domain.DocumentSucceeded{Meta: m(), DocumentID: d, ClaimID: "c-" + d,
			LineItems: []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 1.5, Amount: 3}}})
	}
	// The job's run ends: document.processed for the endpoint.
	f3 = append(f3, &domain.DocumentPreprocessed{Meta: m(), DocumentID: jobDoc, ClaimID: "c-" + jobDoc, ContentType: "application/pdf", Pages: 1, TextChars: 100})
	var fetches [][]eventstore.Record
	offset := int64(0)
	for _, evs := range [][]domain.Event{f1, f2, f3} {
		var recs []eventstore.Record
		for _, e := range evs {
			recs = append(recs, eventstore.Record{Position: eventstore.Position{Offset: offset}, Event: e})
			offset++
		}
		fetches = append(fetches, recs)
	}
	return fetches
}

// deliveryOf is the fetch that delivers b1's batch.completed notification,
// as v holds it, at offset.
func deliveryOf(t *testing.T, v *Views, offset int64) []eventstore.Record {
	t.Helper()
	ns, err := v.BatchNotifications("o1", "b1")
	if err != nil || len(ns) != 1 {
		t.Fatalf("b1's notifications: %+v, %v", ns, err)
	}
	return []eventstore.Record{{Position: eventstore.Position{Offset: offset}, Event: &domain.WebhookDeliveryAttempted{
		Meta: domain.Meta{EventID: "delivery", OrgID: "o1"}, NotificationID: ns[0].ID, Attempt: 1, HTTPStatus: 200, LatencyMillis: 2, Outcome: domain.DeliveryDelivered}}}
}

// TestPipelineFoldsBeforeTheFetchBeforeCommits: every fetch folds while the
// one before it has not committed (holdCommits), and the views end as they
// do when each fetch commits before the next folds: the fold reads the
// fetch before from its maps, and waits for its commit before iterating
// or reading endpoints it wrote. With the object cache off, every
// document, batch and job comes from those maps. Free, the commits run
// when they will, beside the folds (for the race detector: a commit
// encodes the views the next fold reads).
func TestPipelineFoldsBeforeTheFetchBeforeCommits(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		opts []Option
		hold bool
	}{"cache off": {[]Option{WithCacheEntries(0)}, true}, "cache on": {nil, true}, "free": {nil, false}} {
		opts := c.opts
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fetches := pipelineLog(t)
			single, err := Open(t.TempDir(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer single.Close()
			for _, f := range fetches {
				if err := single.ApplyRecords(f); err != nil {
					t.Fatal(err)
				}
			}
			last := fetches[len(fetches)-1]
			fetches = append(fetches, deliveryOf(t, single, last[len(last)-1].Offset+1))
			if err := single.ApplyRecords(fetches[len(fetches)-1]); err != nil {
				t.Fatal(err)
			}

			piped, err := Open(t.TempDir(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer piped.Close()
			piped.holdCommits = c.hold
			var applied [][]eventstore.Record
			piped.listeners = append(piped.listeners, func(recs []eventstore.Record) { applied = append(applied, recs) })
			p := piped.Pipeline()
			for i, f := range fetches {
				if err := p.Apply(f); err != nil {
					t.Fatalf("fetch %d: %v", i+1, err)
				}
			}
			if err := p.Flush(); err != nil {
				t.Fatal(err)
			}
			if piped.Noops() != 0 || single.Noops() != 0 {
				t.Fatalf("refused: %d pipelined, %d one by one", piped.Noops(), single.Noops())
			}
			if len(applied) != len(fetches) || applied[3][0].Offset != fetches[3][0].Offset {
				t.Fatalf("listeners saw %d fetches, want %d in order", len(applied), len(fetches))
			}
			if got := piped.Offsets()[0]; got != fetches[len(fetches)-1][0].Offset+1 {
				t.Fatalf("offset %d after the last fetch", got)
			}
			snap, err := single.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Close()
			diffs, err := Diff(snap, piped, 10)
			if err != nil || len(diffs) > 0 {
				t.Fatalf("pipelined views differ from views applied a fetch at a time: %v, %v", diffs, err)
			}
			// What the log does, so that equal views are not equally empty.
			if b, err := piped.Batch("o1", "b1"); err != nil || b.Counts.Of(domain.PublicSucceeded) != 10 {
				t.Fatalf("b1: %+v, %v", b, err)
			}
			if d, err := piped.Document("o1", "e00"); err != nil || !d.BatchDeleted {
				t.Fatalf("a document of the deleted b2: %+v, %v", d, err)
			}
			if j, err := piped.Job("o1", "job1"); err != nil || !j.Rows[0].Status.Terminal() {
				t.Fatalf("job1: %+v, %v", j, err)
			}
			if ns, err := piped.EndpointNotifications("o1", "ep1"); err != nil || len(ns) != 1 {
				t.Fatalf("ep1's notifications: %d, %v", len(ns), err)
			}
			if ns, err := piped.BatchNotifications("o1", "b1"); err != nil || len(ns) != 1 || ns[0].State != "delivered" {
				t.Fatalf("b1's notification: %+v, %v", ns, err)
			}
		})
	}
}

// TestFailedCommitIsForgotten: a fetch whose commit fails leaves nothing
// behind, in Pebble or in the apply goroutine's caches, whether the
// failure shows at once (ApplyRecords) or only when the next fetch has
// folded on top of it (Pipeline): applied again, the log ends in views
// equal to those of a node whose commits never failed. Caches that kept
// the failed fold would apply its events twice, and the fold refuses
// those.
func TestFailedCommitIsForgotten(t *testing.T) {
	t.Parallel()
	fetches := pipelineLog(t)
	want, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { want.Close() }) // after the parallel subtests
	for _, f := range fetches {
		if err := want.ApplyRecords(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{"sync", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			v, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if err := v.ApplyRecords(fetches[0]); err != nil {
				t.Fatal(err)
			}
			errDisk := errors.New("disk gone")
			v.failCommit = func() error { return errDisk }
			if mode == "sync" {
				err = v.ApplyRecords(fetches[1])
			} else {
				p := v.Pipeline()
				if err = p.Apply(fetches[1]); err != nil {
					t.Fatalf("the fold of fetch 2: %v", err)
				}
				err = p.Apply(fetches[2]) // folds on fetch 2, then finds its commit failed
			}
			if !errors.Is(err, errDisk) {
				t.Fatalf("applying over a failing commit: %v, want %v", err, errDisk)
			}
			v.failCommit = nil
			if got, want := v.Offsets()[0], fetches[1][0].Offset; got != want {
				t.Fatalf("offset %d after the failed commit, want %d", got, want)
			}
			for _, f := range fetches[1:] {
				if err := v.ApplyRecords(f); err != nil {
					t.Fatal(err)
				}
			}
			if v.Noops() != 0 {
				t.Fatalf("%d events refused after the failed commit", v.Noops())
			}
			snap, err := want.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Close()
			if diffs, err := Diff(snap, v, 10); err != nil || len(diffs) > 0 {
				t.Fatalf("views after a failed commit differ: %v, %v", diffs, err)
			}
		})
	}
}
