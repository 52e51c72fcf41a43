package eventstore_test

import (
	"fmt"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

func ExampleCodec() {
	codec, err := eventstore.NewCodec()
	if err != nil {
		panic(err)
	}
	batch := "march"
	in := &domain.DocumentUploaded{
		Meta: domain.Meta{
			EventID: "ev-1",
			OrgID:   "acme",
			// Producers truncate to microseconds in UTC: the precision
			// of Avro's timestamp-micros.
			OccurredAt: time.Date(2025, 3, 1, 9, 30, 0, 123456789, time.UTC).Truncate(time.Microsecond),
			Actor:      "key-1",
		},
		DocumentID:  "doc-1",
		BatchName:   &batch,
		FileName:    "invoice.pdf",
		ContentType: "application/pdf",
		Size:        1234,
		BlobKey:     "sha256/ab",
	}
	b, err := codec.Encode(in)
	if err != nil {
		panic(err)
	}
	fmt.Printf("marker % X\n", b[:2])

	out, err := codec.Decode(b)
	if err != nil {
		panic(err)
	}
	doc := out.(*domain.DocumentUploaded)
	fmt.Println(out.Type(), doc.DocumentID, *doc.BatchName, doc.Reference == nil)
	fmt.Println(doc.Meta.OccurredAt.Format(time.RFC3339Nano))
	// Output:
	// marker C3 01
	// DocumentUploaded doc-1 march true
	// 2025-03-01T09:30:00.123456Z
}
