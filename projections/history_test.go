package projections_test

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/projections"
)

// TestViewsWithoutHistoryStartAgain: views written before the history
// index existed (no marker) are dropped on open and applied again from
// offset 0, so that no history silently lacks the older events.
func TestViewsWithoutHistoryStartAgain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l := newLog()
	recs := []domain.Event{
		&domain.DocumentUploaded{Meta: domain.Meta{EventID: "e1", OrgID: "o1", OccurredAt: at(1)}, DocumentID: "d1", FileName: "a.pdf"},
		&domain.DocumentQueued{Meta: domain.Meta{EventID: "e2", OrgID: "o1", OccurredAt: at(2)}, DocumentID: "d1", Phase: domain.PhaseFull, Attempt: 1},
	}
	for _, e := range recs {
		f.apply(l.record(0, e))
	}
	// Reopening keeps views that have the marker.
	f.restart()
	if got := f.v.Offsets()[0]; got != 2 {
		t.Fatalf("offset after restart %d, want 2", got)
	}
	if err := f.v.DB().Delete([]byte("meta/history"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	f.restart()
	if got := len(f.v.Offsets()); got != 0 {
		t.Fatalf("offsets %v after opening views without history, want none", f.v.Offsets())
	}
	if _, err := f.v.Document("o1", "d1"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("document survived the reset: %v", err)
	}
	l = newLog()
	for _, e := range recs {
		f.apply(l.record(0, e))
	}
	h, _, err := f.v.History(projections.HistoryDocument, "o1", "d1", "", 10)
	if err != nil || len(h) != 2 || h[0].Event.Type() != "DocumentUploaded" || h[1].Offset != 1 {
		t.Fatalf("history after the rebuild: %v %+v", err, h)
	}
	if _, _, err := f.v.History(projections.HistoryDocument, "o1", "d1", "short", 10); !errors.Is(err, projections.ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
}
