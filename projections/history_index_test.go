package projections_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// windowLog is one document's lifecycle, twice over (requeued after a
// failure), starting a few offsets before a partition's second index
// window (16384), so that its history spans two index values.
func windowLog() []eventstore.Record {
	l := newLog()
	l.next[3] = 1<<14 - 4
	batch := "b1"
	var recs []eventstore.Record
	add := func(e domain.Event) { recs = append(recs, l.record(3, e)) }
	add(&domain.DocumentUploaded{Meta: meta("o1", 1), DocumentID: "d1", BatchName: &batch, FileName: "a.txt", ContentType: "text/plain", Size: 10, BlobKey: "blob/d1"})
	for attempt := 1; attempt <= 3; attempt++ {
		claim := fmt.Sprintf("c%d", attempt)
		add(&domain.DocumentQueued{Meta: meta("o1", int64(attempt*10)), DocumentID: "d1", Phase: domain.PhaseFull, Attempt: attempt})
		add(&domain.ProcessingStarted{Meta: meta("o1", int64(attempt*10+1)), DocumentID: "d1", Phase: domain.PhaseFull, Attempt: attempt, ClaimID: claim, Worker: "w1"})
		if attempt < 3 {
			add(&domain.DocumentFailed{Meta: meta("o1", int64(attempt*10+2)), DocumentID: "d1", ClaimID: claim, Phase: domain.PhaseFull, Code: "timeout", Message: "slow", Retryable: true})
		}
	}
	add(&domain.DocumentPreprocessed{Meta: meta("o1", 39), DocumentID: "d1", ClaimID: "c3", ContentType: "text/plain", Pages: 1, TextChars: 10})
	add(&domain.DocumentSucceeded{Meta: meta("o1", 40), DocumentID: "d1", ClaimID: "c3"})
	return recs
}

// TestHistoryAcrossIndexWindows pages through a history that spans two
// index values, one event at a time and in larger pages: every event once,
// in log order, whatever the page size.
func TestHistoryAcrossIndexWindows(t *testing.T) {
	t.Parallel()
	f := setup(t)
	recs := windowLog()
	f.apply(recs...)
	if n := f.v.Noops(); n != 0 {
		t.Fatalf("%d events refused: the test's log is wrong", n)
	}
	for _, kind := range []projections.HistoryKind{projections.HistoryDocument, projections.HistoryBatch} {
		id := map[projections.HistoryKind]string{projections.HistoryDocument: "d1", projections.HistoryBatch: "b1"}[kind]
		for _, limit := range []int{1, 3, 4, 100} {
			var got []int64
			cursor, pages := "", 0
			for {
				page, next, err := f.v.History(kind, "o1", id, cursor, limit)
				if err != nil {
					t.Fatalf("%s limit %d: %v", kind, limit, err)
				}
				if len(page) > limit {
					t.Fatalf("%s limit %d: a page of %d", kind, limit, len(page))
				}
				for _, e := range page {
					got = append(got, e.Offset)
				}
				pages++
				if next == "" {
					break
				}
				cursor = next
			}
			if len(got) != len(recs) {
				t.Fatalf("%s limit %d: %d events %v, want %d", kind, limit, len(got), got, len(recs))
			}
			for i, r := range recs {
				if got[i] != r.Offset {
					t.Fatalf("%s limit %d: event %d at offset %d, want %d", kind, limit, i, got[i], r.Offset)
				}
			}
			if want := (len(recs) + limit - 1) / limit; pages != want {
				t.Errorf("%s limit %d: %d pages, want %d", kind, limit, pages, want)
			}
		}
	}
}

// TestHistoryIndexIgnoresFetchBoundaries: the index merges one value per
// entity and window per fetch, and a rebuild folds larger fetches than a
// live node, so the stored bytes must not depend on where fetches ended
// (invariant 4).
func TestHistoryIndexIgnoresFetchBoundaries(t *testing.T) {
	t.Parallel()
	recs := windowLog()
	whole := setup(t)
	whole.apply(recs...)
	single := setup(t)
	for _, r := range recs {
		single.apply(r)
	}
	pairs := setup(t)
	for i := 0; i < len(recs); i += 2 {
		pairs.apply(recs[i:min(i+2, len(recs))]...)
	}
	pairs.restart() // and whatever Pebble flushed or compacted
	sameDB(t, "one fetch vs one fetch per event", dump(t, whole.v), dump(t, single.v))
	sameDB(t, "one fetch vs fetches of two", dump(t, whole.v), dump(t, pairs.v))
}

// TestHistoryIndexOncePerEvent: a BatchDeleted is indexed under its
// batch's documents (found before the delete) and under the batch; each
// lists it once, and a re-delivered fetch indexes nothing again.
func TestHistoryIndexOncePerEvent(t *testing.T) {
	t.Parallel()
	f, l := setup(t), newLog()
	batch := "b1"
	up := l.record(0, &domain.DocumentUploaded{Meta: meta("o1", 1), DocumentID: "d1", BatchName: &batch, FileName: "a.txt", ContentType: "text/plain", Size: 10, BlobKey: "blob/d1"})
	del := l.record(0, &domain.BatchDeleted{Meta: meta("o1", 2), BatchName: "b1"})
	f.apply(up, del)
	f.apply(up, del) // re-delivered
	for kind, id := range map[projections.HistoryKind]string{projections.HistoryDocument: "d1", projections.HistoryBatch: "b1"} {
		h, _, err := f.v.History(kind, "o1", id, "", 10)
		if err != nil || len(h) != 2 || h[0].Offset != 0 || h[1].Offset != 1 {
			t.Fatalf("%s history: %v %+v, want offsets 0 and 1 once each", kind, err, h)
		}
	}
}

// TestViewsWithAnOlderHistoryLayoutStartAgain: views that indexed history
// in the first layout (a key per event and entity, marker "1") are
// dropped and applied again from offset 0.
func TestViewsWithAnOlderHistoryLayoutStartAgain(t *testing.T) {
	t.Parallel()
	f, l := setup(t), newLog()
	f.apply(l.record(0, &domain.DocumentUploaded{Meta: meta("o1", 1), DocumentID: "d1", FileName: "a.txt"}))
	if err := f.v.DB().Set([]byte("meta/history"), []byte("1"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	f.restart()
	if got := f.v.Offsets(); len(got) != 0 {
		t.Fatalf("offsets %v after opening views in the old layout, want none", got)
	}
	f.restart() // now in the current layout: kept
	f.apply(l.record(0, &domain.DocumentQueued{Meta: meta("o1", 2), DocumentID: "d1", Phase: domain.PhaseFull, Attempt: 1}))
	f.restart()
	if got := f.v.Offsets()[0]; got != 2 {
		t.Fatalf("offset %d after a restart in the current layout, want 2", got)
	}
}

// TestCopiesSealOnceAppliedPast: a window of the events' copies is
// compressed by the fetch that applies past its last offset, whether or
// not that fetch copies an event into it (it copies none of the events the
// fold refuses), and reads back the same; a window still open is not. The
// stored bytes do not depend on where fetches ended (invariant 4).
func TestCopiesSealOnceAppliedPast(t *testing.T) {
	t.Parallel()
	l := newLog()
	var recs []eventstore.Record
	for i := range 70 { // offsets 0-69: windows 0 and 64
		id := fmt.Sprintf("d%d", i)
		recs = append(recs, l.record(0, &domain.DocumentUploaded{Meta: meta("o1", int64(i)), DocumentID: id, FileName: id + ".txt", ContentType: "text/plain", Size: 10, BlobKey: "blob/" + id}))
	}
	var refused []eventstore.Record
	for i := range 60 { // offsets 70-129: past window 64, none copied
		refused = append(refused, l.record(0, &domain.DocumentQueued{Meta: meta("o1", 100), DocumentID: fmt.Sprintf("ghost%d", i), Phase: domain.PhaseFull, Attempt: 1}))
	}
	f := setup(t)
	window := func(o int64, sealed, stored bool) {
		t.Helper()
		s, st, err := f.v.CopiesWindow(0, o)
		if err != nil || s != sealed || st != stored {
			t.Fatalf("window of offset %d: sealed %v, stored %v, %v; want sealed %v, stored %v", o, s, st, err, sealed, stored)
		}
	}
	f.apply(recs[:40]...)
	window(0, false, true)
	f.apply(recs[40:]...) // seals window 0, half of it from the fetch before
	window(0, true, true)
	window(64, false, true)
	f.apply(refused...)
	window(64, true, true)
	window(128, false, false)
	if n := f.v.Noops(); n != int64(len(refused)) {
		t.Fatalf("%d events refused, want %d", n, len(refused))
	}
	for i, r := range recs {
		h, _, err := f.v.History(projections.HistoryDocument, "o1", fmt.Sprintf("d%d", i), "", 10)
		if err != nil || len(h) != 1 || h[0].Offset != r.Offset || h[0].Event.Type() != "DocumentUploaded" {
			t.Fatalf("history of d%d: %v %+v, want its upload at %d", i, err, h, r.Offset)
		}
	}
	whole := setup(t)
	whole.apply(append(slices.Clone(recs), refused...)...)
	sameDB(t, "three fetches vs one", dump(t, f.v), dump(t, whole.v))
}
