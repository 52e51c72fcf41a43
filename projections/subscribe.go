package projections

import (
	"sync"
	"sync/atomic"

	"github.com/docket/docket/eventstore"
)

// Subscriptions live beside Views rather than in it: the set of live
// subscribers of each Views, created on the first Subscribe and removed
// with the last subscriber, so a closed Views is not kept alive.
var (
	subsMu    sync.Mutex
	subsByVw  = map[*Views]map[*subscription]struct{}{}
	subsCount atomic.Int64 // live subscriptions of every Views; 0 skips the lock
)

type subscription struct {
	ch chan []eventstore.Record
}

// Subscribe returns a channel that receives the records of every fetch
// applied after the call, in apply order, once each fetch has been committed
// and the applied offsets (Offsets, WaitFor) already include it. A record is
// delivered at most once; the slices are shared with other subscribers and
// OnApplied listeners and must not be modified.
//
// Delivery never blocks the apply loop: a subscriber whose buffer (at least
// 1) is full when a fetch is applied is dropped, and its channel closed.
// A closed channel therefore means "you missed something": start again from
// the current state. cancel ends the subscription and closes the channel
// unless it is already closed; it is idempotent and safe from any goroutine.
func (v *Views) Subscribe(buffer int) (ch <-chan []eventstore.Record, cancel func()) {
	sub := &subscription{ch: make(chan []eventstore.Record, max(buffer, 1))}
	subsMu.Lock()
	set := subsByVw[v]
	if set == nil {
		set = map[*subscription]struct{}{}
		subsByVw[v] = set
	}
	set[sub] = struct{}{}
	subsCount.Add(1)
	subsMu.Unlock()
	return sub.ch, func() {
		subsMu.Lock()
		defer subsMu.Unlock()
		v.unsubscribeLocked(sub)
	}
}

// unsubscribeLocked removes sub and closes its channel, once. subsMu held.
func (v *Views) unsubscribeLocked(sub *subscription) {
	set := subsByVw[v]
	if _, ok := set[sub]; !ok {
		return
	}
	delete(set, sub)
	if len(set) == 0 {
		delete(subsByVw, v)
	}
	subsCount.Add(-1)
	close(sub.ch)
}

// notifySubscribers hands one applied fetch to every subscriber without
// blocking, dropping those that cannot take it. It runs in the apply
// goroutine after the offsets are published.
func (v *Views) notifySubscribers(applied []eventstore.Record) {
	if len(applied) == 0 || subsCount.Load() == 0 {
		return
	}
	subsMu.Lock()
	defer subsMu.Unlock()
	for sub := range subsByVw[v] {
		select {
		case sub.ch <- applied:
		default:
			v.log.Debug().Msg("projections: slow subscriber dropped")
			v.unsubscribeLocked(sub)
		}
	}
}
