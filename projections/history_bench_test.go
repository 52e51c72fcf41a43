package projections

import (
	"fmt"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// lifecycle returns the five events of one document's happy path.
func lifecycle(org, batch, doc string, at time.Time) []domain.Event {
	m := func(i int) domain.Meta {
		return domain.Meta{EventID: fmt.Sprintf("%s-%d", doc, i), OrgID: org, OccurredAt: at.Add(time.Duration(i) * time.Millisecond)}
	}
	cur := "EUR"
	return []domain.Event{
		&domain.DocumentUploaded{Meta: m(0), DocumentID: doc, BatchName: &batch, FileName: "a.pdf", ContentType: "application/pdf", Size: 100, BlobKey: "k"},
		&domain.DocumentQueued{Meta: m(1), DocumentID: doc, Phase: domain.PhaseFull, Attempt: 1},
		&domain.ProcessingStarted{Meta: m(2), DocumentID: doc, Phase: domain.PhaseFull, Attempt: 1, ClaimID: "c-" + doc, Worker: "w"},
		&domain.DocumentPreprocessed{Meta: m(3), DocumentID: doc, ClaimID: "c-" + doc, ContentType: "application/pdf", Pages: 1, TextChars: 100},
		&domain.DocumentSucceeded{Meta: m(4), DocumentID: doc, ClaimID: "c-" + doc, Currency: &cur,
			LineItems: []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 1.5, Amount: 3}}},
	}
}

// batchLog is docs documents of one batch, each through its lifecycle, as
// records of partition 0.
func batchLog(docs int) []eventstore.Record {
	var recs []eventstore.Record
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := range docs {
		for _, e := range lifecycle("o1", "b1", fmt.Sprintf("d%05d", d), t0.Add(time.Duration(d)*time.Second)) {
			recs = append(recs, eventstore.Record{Position: eventstore.Position{Offset: int64(len(recs))}, Event: e})
		}
	}
	return recs
}

// BenchmarkApply measures applying document lifecycles in fetches of 500
// events, with and without the history index: its cost on the apply path.
func BenchmarkApply(b *testing.B) {
	recs := batchLog(1000)
	for _, history := range []bool{false, true} {
		b.Run(fmt.Sprintf("history=%t", history), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				v, err := Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				v.noHistory = !history
				b.StartTimer()
				for i := 0; i < len(recs); i += 500 {
					if err := v.ApplyRecords(recs[i:min(i+500, len(recs))]); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				v.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/event")
		})
	}
}

// BenchmarkAt measures time travel to the end of a batch of n documents
// (5n events replayed).
func BenchmarkAt(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("documents=%d", n), func(b *testing.B) {
			v, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer v.Close()
			recs := batchLog(n)
			if err := v.ApplyRecords(recs); err != nil {
				b.Fatal(err)
			}
			end := recs[len(recs)-1].Event.Header().OccurredAt
			for b.Loop() {
				past, err := v.At(HistoryBatch, "o1", "b1", end)
				if err != nil {
					b.Fatal(err)
				}
				if bt, err := past.Batch("o1", "b1"); err != nil || !bt.AllDone() {
					b.Fatalf("batch then: %v %+v", err, bt)
				}
				past.Close()
			}
		})
	}
}
