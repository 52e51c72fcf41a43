package projections

import (
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
)

// TestDueFloor: scans of the due index start past delivered entries, yet
// find a notification committed later with an earlier due time, and ones
// that were past the limit or not yet due.
func TestDueFloor(t *testing.T) {
	t.Parallel()
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	const p = 3
	notif := func(id string, at int64) domain.Notification {
		return domain.Notification{ID: id, OrgID: "o", Partition: p, State: "pending", NextAt: time.Unix(at, 0)}
	}
	// commit applies fn as one fetch would: a batch, then the floors noted.
	commit := func(fn func(tx *Tx) error) {
		t.Helper()
		b := v.db.NewIndexedBatch()
		defer b.Close()
		due := map[int32]int64{}
		if err := fn(&Tx{b: b, views: v, written: map[string][]byte{}, due: due}); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		v.due.note(due)
	}
	put := func(id string, at int64) {
		commit(func(tx *Tx) error { return putNotification(tx, notif(id, at)) })
	}
	deliver := func(id string, at int64) {
		commit(func(tx *Tx) error { return tx.del(dueKey(notif(id, at))) })
	}
	due := func(now int64, limit int, want ...string) {
		t.Helper()
		ns, err := v.DueNotifications(p, time.Unix(now, 0), limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range ns {
			got = append(got, n.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("due at %d (limit %d): %v, want %v", now, limit, got, want)
		}
	}
	put("a", 10)
	put("b", 20)
	put("c", 30)
	due(25, 1, "a")       // the limit stops it at a
	due(25, 10, "a", "b") // c is not due yet
	deliver("a", 10)
	deliver("b", 20)
	due(25, 10) // the floor moves to c
	put("d", 5) // earlier than the floor
	due(25, 10, "d")
	due(100, 10, "d", "c")
	deliver("d", 5)
	deliver("c", 30)
	due(100, 10)
	put("e", 1)
	due(100, 10, "e")
}
