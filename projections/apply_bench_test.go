package projections_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// BenchmarkApplyLifecycle applies fetch-sized batches (4096 records, as
// Views.Run polls) of whole document lifecycles — upload into a batch of
// its own, queue, claim, preprocessed, succeed with two line items — the shape of the log
// `docket bench` writes. It reports events applied per second.
func BenchmarkApplyLifecycle(b *testing.B) {
	f, l := setup(&testing.T{}), newLog()
	defer f.v.Close()
	var lc lifecycles
	events := 0
	for b.Loop() {
		recs := make([]eventstore.Record, 0, 4096)
		for range 819 {
			recs = lc.next(l, recs)
		}
		if err := f.v.ApplyRecords(recs); err != nil {
			b.Fatal(err)
		}
		events += len(recs)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	if f.v.Noops() != 0 {
		b.Fatalf("%d events refused: the benchmark's log is wrong", f.v.Noops())
	}
}

// BenchmarkApplySteady applies the same lifecycles in fetches of three to
// five records, one step each of as many documents in flight, as a live
// node polls under a steady load (at half of peak in `docket bench`, a
// fetch of a few records every millisecond or two): what every fetch pays
// however small it is (its batch, its commit, the counts it rewrites)
// dominates.
func BenchmarkApplySteady(b *testing.B) {
	f, l := setup(&testing.T{}), newLog()
	defer f.v.Close()
	var lc lifecycles
	var inFlight [][]domain.Event
	events := 0
	for i := 0; b.Loop(); i++ {
		n := 3 + i%3
		for len(inFlight) < n {
			inFlight = append(inFlight, lc.events())
		}
		fetch := make([]eventstore.Record, 0, n)
		for j := range n {
			fetch = append(fetch, l.record(0, inFlight[j][0]))
			inFlight[j] = inFlight[j][1:]
		}
		inFlight = slices.DeleteFunc(inFlight, func(evs []domain.Event) bool { return len(evs) == 0 })
		if err := f.v.ApplyRecords(fetch); err != nil {
			b.Fatal(err)
		}
		events += len(fetch)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	if f.v.Noops() != 0 {
		b.Fatalf("%d events refused: the benchmark's log is wrong", f.v.Noops())
	}
}

// lifecycles makes whole document lifecycles — upload into a batch of its
// own, queue, claim, preprocessed, succeed with two line items — the shape
// of the log `docket bench` writes.
type lifecycles struct{ doc int }

// next appends the records of one document's lifecycle to recs, in a
// partition of its own choosing.
func (c *lifecycles) next(l *logBuilder, recs []eventstore.Record) []eventstore.Record {
	p := int32((c.doc + 1) % 12)
	for _, e := range c.events() {
		recs = append(recs, l.record(p, e))
	}
	return recs
}

func (c *lifecycles) events() []domain.Event {
	c.doc++
	id, batch, claim := fmt.Sprintf("doc_%d", c.doc), fmt.Sprintf("b%d", c.doc), fmt.Sprintf("c%d", c.doc)
	return []domain.Event{
		&domain.DocumentUploaded{Meta: meta("o1", 1), DocumentID: id, BatchName: &batch, FileName: id + ".txt", ContentType: "text/plain", Size: 230, BlobKey: "blob/" + id},
		&domain.DocumentQueued{Meta: meta("o1", 2), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1},
		&domain.ProcessingStarted{Meta: meta("o1", 3), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1, ClaimID: claim, Worker: "w1"},
		&domain.DocumentPreprocessed{Meta: meta("o1", 4), DocumentID: id, ClaimID: claim, ContentType: "text/plain", Pages: 1, TextChars: 230},
		&domain.DocumentSucceeded{Meta: meta("o1", 5), DocumentID: id, ClaimID: claim, LineItems: lifecycleItems},
	}
}

var lifecycleItems = []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 10.5, Amount: 21}, {Description: "Service fee", Quantity: 1, UnitPrice: 10, Amount: 10}}
