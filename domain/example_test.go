package domain_test

import (
	"fmt"
	"time"

	"github.com/docket/docket/domain"
)

// Example folds one document through a full run and shows what the batch
// surface reports after each event. The preprocess step is internal: the
// document stays "processing" until extraction is done.
func Example() {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	meta := func() domain.Meta {
		at = at.Add(time.Second)
		return domain.Meta{OrgID: "org_acme", OccurredAt: at}
	}
	batch := "invoices"
	events := []domain.Event{
		&domain.DocumentUploaded{Meta: meta(), DocumentID: "doc1", BatchName: &batch, FileName: "a.pdf"},
		&domain.DocumentQueued{Meta: meta(), DocumentID: "doc1", Phase: domain.PhaseFull, Attempt: 1},
		&domain.ProcessingStarted{Meta: meta(), DocumentID: "doc1", Phase: domain.PhaseFull, Attempt: 1, ClaimID: "claim1"},
		&domain.DocumentPreprocessed{Meta: meta(), DocumentID: "doc1", ClaimID: "claim1", Pages: 2},
		&domain.DocumentSucceeded{Meta: meta(), DocumentID: "doc1", ClaimID: "claim1",
			LineItems: []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 5, Amount: 10}}},
	}
	var doc domain.Document
	b := domain.NewBatch("org_acme", batch)
	for _, e := range events {
		next, err := doc.Apply(e)
		if err != nil {
			fmt.Println(e.Type(), "refused:", err)
			continue
		}
		b, _ = b.Track(doc, next)
		doc = next
		_, started, completed := b.Timestamps()
		fmt.Printf("%-20s document=%-10s batch=%-10s all_done=%-5v started=%v completed=%v\n",
			e.Type(), doc.Status.BatchStatus(), b.Status(), b.AllDone(), !started.IsZero(), !completed.IsZero())
	}
	// Output:
	// DocumentUploaded     document=queued     batch=queued     all_done=false started=false completed=false
	// DocumentQueued       document=queued     batch=queued     all_done=false started=false completed=false
	// ProcessingStarted    document=processing batch=processing all_done=false started=true completed=false
	// DocumentPreprocessed document=processing batch=processing all_done=false started=true completed=false
	// DocumentSucceeded    document=succeeded  batch=succeeded  all_done=true  started=true completed=true
}
