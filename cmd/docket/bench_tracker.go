package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// The hops of one document's lifecycle, in order. Each is measured between
// two stamps taken on this machine's clock: the client's, a record's
// produce timestamp (set by the producing client), the moment the views
// applied a record, the work record's timestamp, the webhook's arrival.
const (
	hopUploadAppend  = "1 upload request -> DocumentUploaded appended (HTTP, blob made durable)"
	hopUploadApplied = "2 DocumentUploaded appended -> projection applied"
	hopQueuedApplied = "3 DocumentQueued appended -> projection applied"
	hopDispatched    = "4 DocumentQueued applied -> work dispatched (duties)"
	hopClaimed       = "5 work dispatched -> claimed (worker poll, ProcessingStarted)"
	hopResult        = "6 claimed -> result appended (processing)"
	hopResultApplied = "7 result appended -> projection applied"
	hopWebhook       = "8 result applied -> webhook received (delivery duty)"
	hopAnyApplied    = "  every event: appended -> applied"
)

var hopOrder = []string{hopUploadAppend, hopUploadApplied, hopQueuedApplied, hopDispatched, hopClaimed, hopResult, hopResultApplied, hopWebhook, hopAnyApplied}

type docStamps struct {
	batch                                      string
	start, uploaded, uploadedApplied           time.Time
	queued, queuedApplied, dispatched, claimed time.Time
	succeeded, succeededApplied                time.Time
	failed                                     bool
}

// tracker follows every document from the views' apply notifications, the
// work topic and the webhook receiver; it keeps only documents in flight,
// and histograms, so its memory stays flat however long the run.
type tracker struct {
	mu       sync.Mutex
	docs     map[string]*docStamps
	batches  map[string][]string // batch -> documents in flight
	notified map[string]time.Time
	webhooks bool

	hops                 map[string]*hist
	toSucceeded, toNotif hist
	finished, failed     int
	firstStart, lastDone time.Time
	changed              chan struct{}
}

func newTracker(webhooks bool) *tracker {
	t := &tracker{docs: map[string]*docStamps{}, batches: map[string][]string{}, notified: map[string]time.Time{},
		webhooks: webhooks, hops: map[string]*hist{}, changed: make(chan struct{}, 1)}
	for _, h := range hopOrder {
		t.hops[h] = &hist{}
	}
	return t
}

func (t *tracker) doc(id string) *docStamps {
	d := t.docs[id]
	if d == nil {
		d = &docStamps{}
		t.docs[id] = d
	}
	return d
}

// started records when the client began uploading a document (after the
// upload answered: its events may already have been applied).
func (t *tracker) started(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firstStart.IsZero() || at.Before(t.firstStart) {
		t.firstStart = at
	}
	t.doc(id).start = at
	t.maybeFinish(id)
}

// applied is the views' OnApplied listener.
func (t *tracker) applied(recs []eventstore.Record) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range recs {
		t.hops[hopAnyApplied].add(now.Sub(r.Timestamp))
		switch ev := r.Event.(type) {
		case *domain.DocumentUploaded:
			d := t.doc(ev.DocumentID)
			d.uploaded, d.uploadedApplied = r.Timestamp, now
			if ev.BatchName != nil {
				d.batch = *ev.BatchName
				t.batches[d.batch] = append(t.batches[d.batch], ev.DocumentID)
			}
		case *domain.DocumentQueued:
			d := t.doc(ev.DocumentID)
			d.queued, d.queuedApplied = r.Timestamp, now
		case *domain.ProcessingStarted:
			if d := t.doc(ev.DocumentID); d.claimed.IsZero() {
				d.claimed = r.Timestamp
			}
		case *domain.DocumentSucceeded:
			d := t.doc(ev.DocumentID)
			d.succeeded, d.succeededApplied = r.Timestamp, now
			t.maybeFinish(ev.DocumentID)
		case *domain.DocumentFailed:
			d := t.doc(ev.DocumentID)
			d.failed, d.succeeded, d.succeededApplied = true, r.Timestamp, now
			t.maybeFinish(ev.DocumentID)
		}
	}
	t.signal()
}

// dispatched records a work item's produce time (as the worker takes it).
func (t *tracker) dispatched(docID string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.doc(docID); d.dispatched.IsZero() {
		d.dispatched = at
	}
}

// notify records a batch.completed webhook's arrival.
func (t *tracker) notify(batch string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.notified[batch]; ok {
		return
	}
	t.notified[batch] = at
	for _, id := range t.batches[batch] {
		t.maybeFinish(id)
	}
	t.signal()
}

// maybeFinish folds a document's stamps into the histograms once it has
// started, ended, and (with webhooks) its batch's notification arrived.
func (t *tracker) maybeFinish(id string) {
	d := t.docs[id]
	if d == nil || d.start.IsZero() || d.succeededApplied.IsZero() {
		return
	}
	notifiedAt, ok := t.notified[d.batch]
	if t.webhooks && !ok {
		return
	}
	span := func(name string, a, b time.Time) {
		if !a.IsZero() && !b.IsZero() {
			t.hops[name].add(b.Sub(a))
		}
	}
	span(hopUploadAppend, d.start, d.uploaded)
	span(hopUploadApplied, d.uploaded, d.uploadedApplied)
	span(hopQueuedApplied, d.queued, d.queuedApplied)
	span(hopDispatched, d.queuedApplied, d.dispatched)
	span(hopClaimed, d.dispatched, d.claimed)
	span(hopResult, d.claimed, d.succeeded)
	span(hopResultApplied, d.succeeded, d.succeededApplied)
	t.toSucceeded.add(d.succeededApplied.Sub(d.start))
	done := d.succeededApplied
	if t.webhooks {
		span(hopWebhook, d.succeededApplied, notifiedAt)
		t.toNotif.add(notifiedAt.Sub(d.start))
		done = notifiedAt
	}
	if done.After(t.lastDone) {
		t.lastDone = done
	}
	t.finished++
	if d.failed {
		t.failed++
	}
	delete(t.docs, id)
	if ids := t.batches[d.batch]; len(ids) > 0 {
		left := ids[:0]
		for _, x := range ids {
			if x != id {
				left = append(left, x)
			}
		}
		if len(left) == 0 {
			delete(t.batches, d.batch)
			delete(t.notified, d.batch)
		} else {
			t.batches[d.batch] = left
		}
	}
}

func (t *tracker) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (t *tracker) counts() (finished, failed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.finished, t.failed
}

func (t *tracker) span() (first, last time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstStart, t.lastDone
}

// waitFinished waits until n documents have finished.
func (t *tracker) waitFinished(ctx context.Context, n int, limit time.Duration) error {
	deadline := time.After(limit)
	for {
		if f, _ := t.counts(); f >= n {
			return nil
		}
		select {
		case <-t.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			f, _ := t.counts()
			return fmt.Errorf("bench: only %d of %d documents finished in %s", f, n, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (t *tracker) hopSummaries() []latency {
	out := make([]latency, 0, len(hopOrder))
	for _, name := range hopOrder {
		if !t.webhooks && name == hopWebhook {
			continue
		}
		out = append(out, t.hops[name].summary(name))
	}
	return out
}
