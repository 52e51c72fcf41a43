package main

import (
	"net/http"
	"testing"
	"time"
)

// TestDocumentTimeout: a document that exceeds --document-timeout fails with
// processing_error.code "timeout" and the worker carries on with the next.
func TestDocumentTimeout(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.DocumentTimeout = time.Nanosecond })
	for i := range 3 {
		if _, code := tn.upload("slow", "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	if code := tn.do("POST", "/v1/batches/slow/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	b := tn.waitBatch("slow", func(b batchView) bool { return b.AllDone })
	if b.Status != "failed" || b.Counts["failed"] != 3 {
		t.Fatalf("batch = %+v", b)
	}
	for _, d := range tn.results("slow").Documents {
		if d.ProcessingError == nil || d.ProcessingError.Code != "timeout" {
			t.Fatalf("document = %+v", d)
		}
	}
}
