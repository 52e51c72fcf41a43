package projections

import (
	"errors"
	"strings"
	"testing"
)

// TestHistoryIndexAddsAPositionOnce: an event that names an entity twice
// (no projection does so today; the index must not depend on it) is listed
// once, while the entity's next event is appended.
func TestHistoryIndexAddsAPositionOnce(t *testing.T) {
	t.Parallel()
	h := &historyIndex{}
	key := historyIndexKey(HistoryJob, "o1", "job_1", 2, 40)
	first, second := appendPos(nil, 2, 40), appendPos(nil, 2, 41)
	h.add(key, first)
	h.add(key, first)
	h.add(key, second)
	h.add(key, second)
	if got, want := h.entries[h.at[string(key)]].positions, string(first)+string(second); string(got) != want {
		t.Fatalf("index value %q, want %q", got, want)
	}
	if other := historyIndexKey(HistoryJob, "o1", "job_1", 2, historyWindow+40); string(other) == string(key) {
		t.Fatalf("offsets a window apart share the index key %q", key)
	}
}

// TestCopiesWindowFindsEachEvent: a window's value holds the copies of the
// events merged into it, each found by its offset whatever its place and
// size; an offset the window lacks is not found, and a cut value is an
// error, never a wrong copy.
func TestCopiesWindowFindsEachEvent(t *testing.T) {
	t.Parallel()
	base := int64(5 * copiesWindow)
	copies := map[int64]string{base: "first", base + 1: "", base + 17: strings.Repeat("x", 300), base + copiesWindow - 1: "last"}
	var window []byte
	for _, o := range []int64{base, base + 1, base + 17, base + copiesWindow - 1} {
		window = appendCopy(window, o, []byte(copies[o]))
	}
	for o, want := range copies {
		got, found, err := findCopy(window, o)
		if err != nil || !found || string(got) != want {
			t.Fatalf("offset %d: %q, found %t, %v; want %q", o, got, found, err, want)
		}
	}
	if _, found, err := findCopy(window, base+2); found || err != nil {
		t.Fatalf("an offset the window lacks: found %t, %v", found, err)
	}
	if _, _, err := findCopy(window[:len(window)-1], base+copiesWindow-1); !errors.Is(err, errBadCopies) {
		t.Fatalf("a cut window: %v, want errBadCopies", err)
	}
	if k, l := historyEventKey(3, base), historyEventKey(3, base+copiesWindow-1); string(k) != string(l) {
		t.Fatalf("offsets of one window have keys %q and %q", k, l)
	}
	if k, l := historyEventKey(3, base), historyEventKey(3, base+copiesWindow); string(k) == string(l) {
		t.Fatalf("offsets a window apart share the key %q", k)
	}
}
