package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestResultTooLargeFails: an invoice whose line items make a result event
// larger than a message on the log may be (about 1 MB) fails with
// processing_error.code "result_too_large" instead of being retried
// forever, and the next document is processed.
func TestResultTooLargeFails(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.MaxUpload = 8 << 20 })
	var b strings.Builder
	b.WriteString("INVOICE\nDescription          Qty   Unit Price   Amount\n")
	for i := range 25000 {
		fmt.Fprintf(&b, "Item number %d widget   2   %d.50   %d.00\n", i, i, 2*i+1)
	}
	b.WriteString("Total: 1.00 USD\n")
	if _, code := tn.upload("big", "big.txt", []byte(b.String()), ""); code != http.StatusCreated {
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
