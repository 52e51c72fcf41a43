package projections

import (
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/eventstore"
)

// WithKeyFilterLimit bounds the views' key filter (0: none at all), so the
// shared tests can check that neither it nor its turning off changes a
// byte.
func WithKeyFilterLimit(limit int) Option {
	return func(v *Views) { v.filterLimit = limit }
}

// KeyFilterKeys is how many keys the key filter has counted.
func (v *Views) KeyFilterKeys() int { return v.written.keys }

// Tracked reports whether the key filter tracks key.
func Tracked(key []byte) bool { return !untracked(key) }

// SetDutyBuffer sets how many applied fetches wait for the dispatcher
// before the views drop it, so tests can make it fall behind.
func SetDutyBuffer(d *Dispatcher, n int) { d.buffer = n }

// OnDutyFetch hands every fetch the dispatcher receives from the views to
// fn first; what fn returns is dispatched (nil: the fetch is lost).
func OnDutyFetch(d *Dispatcher, fn func([]eventstore.Record) []eventstore.Record) { d.received = fn }

// SetDutyTicks makes the dispatcher do its chores (commit, drain the group
// member's notices) when ticks delivers, instead of every second.
func SetDutyTicks(d *Dispatcher, ticks <-chan time.Time) { d.ticks = ticks }

// OnDutyRun calls fn after each run of records is dispatched and its
// progress recorded, with each partition's next offset; the dispatcher
// waits for fn.
func OnDutyRun(d *Dispatcher, fn func(next map[int32]int64)) { d.ran = fn }

// LostWorkCheck is the lost-work check of one node, run on demand with the
// event partitions it owns at the time (dispatcher_lostwork_test.go).
type LostWorkCheck struct {
	d       *Dispatcher
	handled *lostHandled
}

// NewLostWorkCheck returns d's lost-work check, having handled nothing.
func NewLostWorkCheck(d *Dispatcher) *LostWorkCheck {
	return &LostWorkCheck{d: d, handled: newLostHandled()}
}

// Check runs one check as a node owning the event partitions owned.
func (c *LostWorkCheck) Check(ctx context.Context, owned ...int32) error {
	return c.d.recoverLostWork(ctx, c.handled, owned)
}

// CopiesWindow says how the window of the events' copies that holds p/o
// is stored: sealed (compressed), open, or not at all.
func (v *Views) CopiesWindow(p int32, o int64) (sealed, stored bool, err error) {
	val, closer, err := v.db.Get(historyEventKey(p, o))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	defer closer.Close()
	return len(val) > 0 && val[0] == sealedCopies, true, nil
}
