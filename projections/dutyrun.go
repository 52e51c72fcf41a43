package projections

import (
	"context"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// dispatch does the duties of recs, in log order, for the records of owned
// partitions at or past their next offset, and then records the progress.
// applied says the views have applied recs; otherwise it waits for them,
// since the duties read the views as of (at least) their events.
func (d *Dispatcher) dispatch(ctx context.Context, recs []eventstore.Record, applied bool) error {
	d.running.Lock()
	defer d.running.Unlock()
	next := map[int32]int64{}
	var events []eventstore.Record
	d.mu.Lock()
	for _, rec := range recs {
		p := rec.Partition
		c, ok := d.cursorLocked(next, p)
		if !ok || rec.Offset < c {
			continue
		}
		next[p] = rec.Offset + 1
		if rec.Err == nil {
			events = append(events, rec)
		}
	}
	d.mu.Unlock()
	if len(next) == 0 {
		return nil
	}
	if err := d.duties(ctx, events, applied); err != nil {
		return err
	}
	// running kept every partition of next owned, by the same duty.
	d.mu.Lock()
	for p, n := range next {
		d.owned[p].next = n
	}
	d.mu.Unlock()
	if d.ran != nil {
		d.ran(next)
	}
	return nil
}

// duties dispatches the work of events and runs the coordinator on them.
func (d *Dispatcher) duties(ctx context.Context, events []eventstore.Record, applied bool) error {
	if !applied {
		last := map[int32]eventstore.Position{}
		for _, rec := range events {
			last[rec.Partition] = rec.Position
		}
		for _, pos := range last {
			if err := d.Views.WaitFor(ctx, pos); err != nil {
				return err
			}
		}
	}
	var items []eventstore.WorkItem
	for _, rec := range events {
		q, ok := rec.Event.(*domain.DocumentQueued)
		if !ok {
			continue
		}
		doc, err := d.Views.Document(q.Meta.OrgID, q.DocumentID)
		if err != nil || doc.Status != domain.StatusQueued || doc.Attempt != q.Attempt {
			continue
		}
		items = append(items, workItem(q.Meta.EventID, &doc))
	}
	for backoff := 100 * time.Millisecond; len(items) > 0; backoff = min(2*backoff, 5*time.Second) {
		err := d.Store.AppendWork(ctx, items...)
		if err == nil {
			break
		}
		d.Log.Warn().Err(err).Int("items", len(items)).Msg("dispatch failed; retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
	return d.coordinate(ctx, events)
}
