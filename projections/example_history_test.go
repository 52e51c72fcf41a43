package projections_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// An entity's history lists the events that shaped it; At shows it as it
// was at an earlier time, folded by the same projections.
func ExampleViews_At() {
	dir, err := os.MkdirTemp("", "docket-views-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	views, err := projections.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer views.Close()

	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	meta := func(id string, sec int) domain.Meta {
		return domain.Meta{EventID: id, OrgID: "org_acme", OccurredAt: t0.Add(time.Duration(sec) * time.Second)}
	}
	events := []domain.Event{
		&domain.DocumentUploaded{Meta: meta("evt_1", 0), DocumentID: "doc_1", FileName: "invoice.pdf", ContentType: "application/pdf", Size: 1234, BlobKey: "sha256/ab12"},
		&domain.DocumentQueued{Meta: meta("evt_2", 5), DocumentID: "doc_1", Phase: domain.PhaseFull, Attempt: 1},
		&domain.ProcessingStarted{Meta: meta("evt_3", 6), DocumentID: "doc_1", Phase: domain.PhaseFull, Attempt: 1, ClaimID: "clm_1", Worker: "w1"},
	}
	var recs []eventstore.Record
	for i, e := range events {
		recs = append(recs, eventstore.Record{Position: eventstore.Position{Offset: int64(i)}, Event: e})
	}
	if err := views.ApplyRecords(recs); err != nil {
		log.Fatal(err)
	}

	history, next, err := views.History(projections.HistoryDocument, "org_acme", "doc_1", "", 100)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range history {
		fmt.Println(e.Offset, e.Event.Type())
	}
	fmt.Println("more:", next != "")

	past, err := views.At(projections.HistoryDocument, "org_acme", "doc_1", t0.Add(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer past.Close()
	then, _ := past.Document("org_acme", "doc_1")
	now, _ := views.Document("org_acme", "doc_1")
	fmt.Println("then:", then.Status.BatchStatus(), "now:", now.Status.BatchStatus())
	// Output:
	// 0 DocumentUploaded
	// 1 DocumentQueued
	// 2 ProcessingStarted
	// more: false
	// then: queued now: processing
}
