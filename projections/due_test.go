package projections

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
)

// dueHarness drives the due index of one partition of views opened on dir
// the way the apply loop and the delivery duty do.
type dueHarness struct {
	t *testing.T
	v *Views
}

const duePartition = 3

// setupDue opens the views in dir; closing them is the caller's (close).
func setupDue(t *testing.T, dir string) *dueHarness {
	t.Helper()
	v, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &dueHarness{t: t, v: v}
}

func (h *dueHarness) close() {
	if err := h.v.Close(); err != nil {
		h.t.Fatal(err)
	}
}

func dueNotif(id string, at int64) domain.Notification {
	return domain.Notification{ID: id, OrgID: "o", Partition: duePartition, State: "pending", NextAt: time.Unix(at, 0)}
}

// commit applies fn as one fetch would: a batch, then the floors noted.
func (h *dueHarness) commit(fn func(tx *Tx) error) {
	h.t.Helper()
	fb := newFetchBatch(h.v.db, 0)
	defer fb.close()
	due := map[int32]int64{}
	if err := fn(&Tx{fb: fb, views: h.v, written: map[string][]byte{}, due: due}); err != nil {
		h.t.Fatal(err)
	}
	if err := fb.b.Commit(pebble.NoSync); err != nil {
		h.t.Fatal(err)
	}
	h.v.due.note(due)
}

func (h *dueHarness) put(id string, at int64) {
	h.commit(func(tx *Tx) error { return putNotification(tx, dueNotif(id, at)) })
}

func (h *dueHarness) deliver(id string, at int64) {
	h.commit(func(tx *Tx) error { return tx.del(dueKey(dueNotif(id, at))) })
}

// due checks what a scan at now with limit returns.
func (h *dueHarness) due(now int64, limit int, want ...string) {
	h.t.Helper()
	ns, err := h.v.DueNotifications(duePartition, time.Unix(now, 0), limit)
	if err != nil {
		h.t.Fatal(err)
	}
	var got []string
	for _, n := range ns {
		got = append(got, n.ID)
	}
	if !slices.Equal(got, want) {
		h.t.Fatalf("due at %d (limit %d): %v, want %v", now, limit, got, want)
	}
}

// TestDueFloor: scans of the due index start past delivered entries, yet
// find a notification committed later with an earlier due time, and ones
// that were past the limit or not yet due.
func TestDueFloor(t *testing.T) {
	t.Parallel()
	h := setupDue(t, t.TempDir())
	defer h.close()
	h.put("a", 10)
	h.put("b", 20)
	h.put("c", 30)
	h.due(25, 1, "a")       // the limit stops it at a
	h.due(25, 10, "a", "b") // c is not due yet
	h.deliver("a", 10)
	h.deliver("b", 20)
	h.due(25, 10) // the floor moves to c
	h.put("d", 5) // earlier than the floor
	h.due(25, 10, "d")
	h.due(100, 10, "d", "c")
	h.deliver("d", 5)
	h.deliver("c", 30)
	h.due(100, 10)
	h.put("e", 1)
	h.due(100, 10, "e")
}

// TestDueFloorAfterRestart is the crash soak's lost notification: a
// restarted node's apply loop re-applies the tail its views lost and so
// notes a due time before the delivery duty's first scan. That first scan
// must still start at the beginning of the range, where notifications the
// views kept from before the crash wait; a note only ever lowers a floor
// an earlier scan set.
func TestDueFloorAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := setupDue(t, dir)
	h.put("kept", 10) // applied, and its attempt lost in the crash
	h.close()

	h = setupDue(t, dir)
	defer h.close()
	h.put("reapplied", 20) // the lost tail, applied again before any scan
	h.due(100, 10, "kept", "reapplied")
	h.deliver("kept", 10)
	h.deliver("reapplied", 20)
	h.due(100, 10)
}

// TestDueFloorAgainstAFullScan runs random puts, deliveries, scans and
// restarts and checks every scan against what a scan from the start of the
// range would return: the floors may only save work, never hide a key.
func TestDueFloorAgainstAFullScan(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 1))
			dir := t.TempDir()
			h := setupDue(t, dir)
			defer func() { h.close() }()
			type entry struct {
				id string
				at int64
			}
			var pending []entry // the model
			for step := range 300 {
				switch op := rng.IntN(10); {
				case op < 4:
					e := entry{fmt.Sprintf("n%03d", step), 1 + rng.Int64N(100)}
					h.put(e.id, e.at)
					pending = append(pending, e)
				case op < 6 && len(pending) > 0:
					i := rng.IntN(len(pending))
					h.deliver(pending[i].id, pending[i].at)
					pending = slices.Delete(pending, i, i+1)
				case op < 9:
					now, limit := rng.Int64N(120), 1+rng.IntN(5)
					slices.SortFunc(pending, func(a, b entry) int {
						if a.at != b.at {
							return cmp.Compare(a.at, b.at)
						}
						return strings.Compare(a.id, b.id)
					})
					var want []string
					for _, e := range pending {
						if e.at <= now && len(want) < limit {
							want = append(want, e.id)
						}
					}
					h.due(now, limit, want...)
				default:
					h.close()
					h = setupDue(t, dir)
				}
			}
		})
	}
}
