package projections_test

import (
	"fmt"
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
	doc := 0
	items := []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 10.5, Amount: 21}, {Description: "Service fee", Quantity: 1, UnitPrice: 10, Amount: 10}}
	events := 0
	for b.Loop() {
		recs := make([]eventstore.Record, 0, 4096)
		for range 819 {
			doc++
			id, batch, claim := fmt.Sprintf("doc_%d", doc), fmt.Sprintf("b%d", doc), fmt.Sprintf("c%d", doc)
			p := int32(doc % 12)
			recs = append(recs,
				l.record(p, &domain.DocumentUploaded{Meta: meta("o1", 1), DocumentID: id, BatchName: &batch, FileName: id + ".txt", ContentType: "text/plain", Size: 230, BlobKey: "blob/" + id}),
				l.record(p, &domain.DocumentQueued{Meta: meta("o1", 2), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1}),
				l.record(p, &domain.ProcessingStarted{Meta: meta("o1", 3), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1, ClaimID: claim, Worker: "w1"}),
				l.record(p, &domain.DocumentPreprocessed{Meta: meta("o1", 4), DocumentID: id, ClaimID: claim, ContentType: "text/plain", Pages: 1, TextChars: 230}),
				l.record(p, &domain.DocumentSucceeded{Meta: meta("o1", 5), DocumentID: id, ClaimID: claim, LineItems: items}))
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
