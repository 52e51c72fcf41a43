package projections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docket/docket/eventstore"
)

// readStall bounds one poll of a catch-up read; past it the loop retries,
// after checking it still owns the partitions.
const readStall = 10 * time.Second

// errReadStalled: a catch-up read got nothing for readStall.
var errReadStalled = errors.New("projections: duties: catch-up read stalled")

// live dispatches records delivered by the views, first reading from Kafka
// what lies between each partition's next offset and its first record
// there.
func (d *Dispatcher) live(ctx context.Context, f *feed, recs []eventstore.Record) error {
	for {
		gaps := d.gaps(recs)
		if len(gaps) == 0 {
			return d.dispatch(ctx, recs, true)
		}
		if err := d.fill(ctx, f, gaps); err != nil {
			return err
		}
	}
}

// gaps maps each owned partition whose records in recs do not continue
// from its next offset to the first record past the gap.
func (d *Dispatcher) gaps(recs []eventstore.Record) map[int32]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	cursor, out := map[int32]int64{}, map[int32]int64{}
	for _, rec := range recs {
		p := rec.Partition
		if _, found := out[p]; found {
			continue
		}
		c, ok := d.cursorLocked(cursor, p)
		if !ok {
			continue
		}
		switch {
		case rec.Offset > c:
			out[p] = rec.Offset
		case rec.Offset == c:
			cursor[p] = c + 1
		default:
			cursor[p] = c
		}
	}
	return out
}

// cursorLocked is partition p's next offset as a walk over records sees
// it: what the walk has advanced it to in cursor, else the partition's
// own; false when p is not owned or its start is not known yet. d.mu held.
func (d *Dispatcher) cursorLocked(cursor map[int32]int64, p int32) (int64, bool) {
	if c, ok := cursor[p]; ok {
		return c, true
	}
	st := d.owned[p]
	if st == nil || st.next < 0 {
		return 0, false
	}
	return st.next, true
}

// fill reads from Kafka, and dispatches, every owned partition's records
// from its next offset up to (not including) to[p]. A new owner's catch-up
// can be millions of records: the loop's chores are done between runs
// when due, so that its progress is committed as it goes (the group's lag
// shows it moving, and a crash loses at most a second of it).
func (d *Dispatcher) fill(ctx context.Context, f *feed, to map[int32]int64) error {
	from := map[int32]int64{}
	d.mu.Lock()
	for p, end := range to {
		if st := d.owned[p]; st != nil && st.next >= 0 && st.next < end {
			from[p] = st.next
		}
	}
	d.mu.Unlock()
	if len(from) == 0 {
		return nil
	}
	r, err := d.Store.NewReader(from)
	if err != nil {
		return err
	}
	defer r.Close()
	for len(from) > 0 {
		pollCtx, cancel := context.WithTimeout(ctx, readStall)
		recs, err := r.Poll(pollCtx, dutyRun)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("%w: %w", eventstore.ErrUnavailable, errReadStalled)
		}
		if err != nil {
			return err
		}
		var run []eventstore.Record
		past := map[int32]bool{}
		for _, rec := range recs {
			switch end, ok := to[rec.Partition]; {
			case !ok:
			case rec.Offset >= end:
				past[rec.Partition] = true
			default:
				run = append(run, rec)
			}
		}
		if err := d.dispatch(ctx, run, false); err != nil {
			return err
		}
		select {
		case <-f.tick:
			d.chores(f)
		default:
		}
		d.mu.Lock()
		for p := range from {
			st := d.owned[p]
			if st != nil && past[p] && st.next >= 0 && st.next < to[p] {
				// Nothing is left below to[p]: the offsets missing there
				// hold no records the reader returns.
				st.next = to[p]
			}
			if st == nil || st.next < 0 || st.next >= to[p] {
				delete(from, p)
			}
		}
		d.mu.Unlock()
	}
	return nil
}
