package projections

import "testing"

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
	if got, want := h.positions(key), string(first)+string(second); string(got) != want {
		t.Fatalf("index value %q, want %q", got, want)
	}
	if other := historyIndexKey(HistoryJob, "o1", "job_1", 2, historyWindow+40); string(other) == string(key) {
		t.Fatalf("offsets a window apart share the index key %q", key)
	}
}
