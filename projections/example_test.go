package projections_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// Views are fed fetches of records; a query after WaitFor sees the write.
func ExampleViews_ApplyRecords() {
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

	batch := "march-invoices"
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	rec := eventstore.Record{
		Position:  eventstore.Position{Partition: 0, Offset: 0},
		Timestamp: at,
		Event: &domain.DocumentUploaded{
			Meta:       domain.Meta{EventID: "evt_1", OrgID: "org_acme", OccurredAt: at, Actor: "key_1"},
			DocumentID: "doc_1", BatchName: &batch, FileName: "invoice.pdf",
			ContentType: "application/pdf", Size: 1234, BlobKey: "sha256/ab12",
		},
	}
	if err := views.ApplyRecords([]eventstore.Record{rec}); err != nil {
		log.Fatal(err)
	}
	if err := views.WaitFor(context.Background(), rec.Position); err != nil {
		log.Fatal(err)
	}

	doc, err := views.Document("org_acme", "doc_1")
	if err != nil {
		log.Fatal(err)
	}
	b, err := views.Batch("org_acme", batch)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("document:", doc.Status, "shown as", doc.Status.BatchStatus())
	fmt.Println("batch:", b.Status(), b.Documents, "document(s)")
	fmt.Println("offsets:", views.Offsets())
	// Output:
	// document: uploaded shown as queued
	// batch: queued 1 document(s)
	// offsets: map[0:1]
}
