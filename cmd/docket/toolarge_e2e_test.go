package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// bigDocumentTimeout is the product's default --document-timeout, for the
// 25,000-line documents below: under -race on two busy cores their
// extraction took longer than the harness's 30 s (CI, once), and these
// tests are not about timeouts.
const bigDocumentTimeout = 2 * time.Minute

// TestResultTooLargeFails: an invoice whose line items make a result event
// larger than a record on the log may be (--max-record-bytes) fails with
// processing_error.code "result_too_large" instead of being retried
// forever, and the next document is processed.
func TestResultTooLargeFails(t *testing.T) {
	t.Parallel()
	// 25,000 line items make a result of about 1.2 MB, over this limit.
	tn := setup(t, func(c *Config) { c.MaxUpload, c.MaxRecordBytes, c.DocumentTimeout = 8<<20, 512<<10, bigDocumentTimeout })
	if _, code := tn.upload("big", "big.txt", manyLines(25000), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	if _, code := tn.upload("big", "small.txt", textInvoice(1), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/big/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	bt := tn.waitBatch("big", func(b batchView) bool { return b.AllDone })
	if bt.Counts["failed"] != 1 || bt.Counts["succeeded"] != 1 {
		t.Fatalf("batch = %+v", bt)
	}
	for _, d := range tn.results("big").Documents {
		failed := d.ProcessingError != nil
		if failed != (d.ProcessingError != nil && d.ProcessingError.Code == "result_too_large") {
			t.Fatalf("document = %+v", d)
		}
	}
}

// TestResultLargerThanKafkasDefaultSucceeds: a result of about 1.2 MB,
// over the 1 MiB that Kafka's brokers and franz-go's producer allow by
// default, is appended, applied and served whole with the default
// configuration, on the embedded broker and on Apache Kafka.
func TestResultLargerThanKafkasDefaultSucceeds(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.MaxUpload, c.DocumentTimeout = 8<<20, bigDocumentTimeout })
	const lines = 25000
	if _, code := tn.upload("large", "large.txt", manyLines(lines), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/large/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	bt := tn.waitBatch("large", func(b batchView) bool { return b.AllDone })
	if bt.Counts["succeeded"] != 1 {
		t.Fatalf("batch = %+v", bt)
	}
	docs := tn.results("large").Documents
	if len(docs) != 1 || len(docs[0].LineItems) != lines || docs[0].LineItems[lines-1].Description != fmt.Sprintf("Item number %d widget", lines-1) {
		n := 0
		if len(docs) == 1 {
			n = len(docs[0].LineItems)
		}
		t.Fatalf("%d documents, %d line items; want one with %d", len(docs), n, lines)
	}
}
