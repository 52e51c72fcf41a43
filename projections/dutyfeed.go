package projections

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/eventstore"
)

// The duties' records come from the views' subscription, already decoded
// and applied. A record the subscription did not deliver (the dispatcher
// fell behind and was dropped, or its partition was assigned after the
// views applied it) is read from Kafka with a short-lived reader, from the
// partition's next offset: every record of an owned partition has its
// duties done once, in log order.

const (
	// dutyBuffer is how many applied fetches wait for the dispatcher
	// before the views drop it. A run takes in what is waiting, so it
	// need only cover the fetches applied during one run's appends.
	dutyBuffer = 256
	// dutyRun is the most records dispatched together (one AppendWork).
	dutyRun = 1024
)

// feed is the dispatch loop's own state.
type feed struct {
	cl      *kgo.Client // the group member
	tick    <-chan time.Time
	sub     <-chan []eventstore.Record
	cancel  func()
	behind  map[int32]bool      // partitions to catch up with the views
	pending []eventstore.Record // live records whose dispatch failed
}

// loop dispatches until ctx ends; a Kafka outage is waited out.
func (d *Dispatcher) loop(ctx context.Context, cl *kgo.Client) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	f := &feed{cl: cl, tick: cmp.Or(d.ticks, tick.C), behind: map[int32]bool{}}
	defer func() {
		if f.cancel != nil {
			f.cancel()
		}
	}()
	for {
		err := d.step(ctx, f)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
		case eventstore.IsRetryable(err):
			// A broker is down or moving leaders: the duties must outlive
			// it. Nothing failed is marked done, so it is tried again.
			d.Log.Warn().Err(err).Msg("duties: kafka unavailable; continuing")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		default:
			return err
		}
	}
}

// step does what is owed (new partitions, catching up, failed records),
// then waits for the next fetch, assignment or commit.
func (d *Dispatcher) step(ctx context.Context, f *feed) error {
	if f.sub == nil {
		// What was applied since the last subscription ended is read from
		// Kafka: a partition that stays idle would not reveal the gap.
		f.sub, f.cancel = d.Views.Subscribe(cmp.Or(d.buffer, dutyBuffer))
		for _, p := range d.Owned() {
			f.behind[p] = true
		}
	}
	resolved, err := d.resolve(ctx, f.cl)
	for _, p := range resolved {
		f.behind[p] = true
	}
	if err != nil {
		return err
	}
	if len(f.behind) > 0 {
		// After subscribing: whatever the views apply later is delivered.
		to := map[int32]int64{}
		applied := d.Views.Offsets()
		for p := range f.behind {
			to[p] = applied[p]
		}
		if err := d.fill(ctx, f, to); err != nil {
			return err
		}
		clear(f.behind)
	}
	if len(f.pending) > 0 {
		if err := d.live(ctx, f, f.pending); err != nil {
			return err
		}
		f.pending = nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-f.tick:
		d.chores(f)
		return nil
	case <-d.wake:
		return nil
	case recs, ok := <-f.sub:
		if !ok {
			f.sub, f.cancel = nil, nil
			return nil
		}
		recs = d.drain(f, recs)
		if d.received != nil {
			recs = d.received(recs)
		}
		if err := d.live(ctx, f, recs); err != nil {
			f.pending = recs
			return err
		}
		return nil
	}
}

// drain adds the fetches already waiting to recs, up to dutyRun records.
// The views share their slices: the first append copies.
func (d *Dispatcher) drain(f *feed, recs []eventstore.Record) []eventstore.Record {
	for n := len(recs); len(recs) < dutyRun; {
		select {
		case more, ok := <-f.sub:
			if !ok {
				f.sub, f.cancel = nil, nil
				return recs
			}
			recs = append(recs[:len(recs):n], more...)
			n = cap(recs)
		default:
			return recs
		}
	}
	return recs
}

// resolve reads where the newly assigned partitions start: the group's
// committed offset, or the log's start. It runs after onAssigned returned,
// so the previous owner's last commit is in.
func (d *Dispatcher) resolve(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	want := map[int32]*duty{}
	d.mu.Lock()
	for p, st := range d.owned {
		if st.next < 0 {
			want[p] = st
		}
	}
	d.mu.Unlock()
	if len(want) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	group, topic := d.Store.GroupName("duties"), d.Store.EventsTopic()
	committed, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: duties: committed offsets of %s: %w", eventstore.ErrUnavailable, group, err)
	}
	var resolved []int32
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, st := range want {
		if d.owned[p] != st {
			continue // revoked meanwhile
		}
		// Offset 0 is the log's start even after retention: the reader
		// resets an offset out of range to the start.
		st.next = 0
		if o, ok := committed.Lookup(topic, p); ok && o.At >= 0 {
			st.next, st.committed = o.At, o.At
		}
		resolved = append(resolved, p)
	}
	return resolved, nil
}

// chores commits the progress made and reports group-management failures;
// the loop does them every second, and so does a catch-up between its
// runs, however long it takes.
func (d *Dispatcher) chores(f *feed) {
	d.commit(f.cl, d.Store.EventsTopic())
	d.drainNotices(f.cl)
}

// drainNotices empties the group member's poll buffer and logs what was
// in it. The member never polls for records (its topic is paused), but
// franz-go queues every group-management failure there as an error
// fetch, for a poll to report: undrained, they would pile up for as long
// as a broker stays unreachable. A nil context is franz-go's way of
// taking what is buffered without waiting.
func (d *Dispatcher) drainNotices(cl *kgo.Client) {
	cl.PollFetches(nil).EachError(func(_ string, _ int32, err error) {
		d.Log.Warn().Err(err).Msg("duties: group management failed; retrying")
	})
}
