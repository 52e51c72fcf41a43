package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/docket/docket/extract/fixture"
)

// processBatch uploads the documents into a new batch, processes it and
// returns the results once every document is done.
func (tn *testNode) processBatch(batch string, docs map[string][]byte) resultsView {
	tn.t.Helper()
	for name, data := range docs {
		if _, code := tn.upload(batch, name, data, ""); code != http.StatusCreated {
			tn.t.Fatalf("upload %s: %d", name, code)
		}
	}
	if code := tn.do("POST", "/v1/batches/"+batch+"/process", nil, "", nil, nil); code != http.StatusAccepted {
		tn.t.Fatalf("process: %d", code)
	}
	tn.waitBatch(batch, func(b batchView) bool { return b.AllDone })
	return tn.results(batch)
}

// TestPageLimitOutcome: the worker applies --max-pages; a longer document
// fails with too_many_pages, a shorter one in the same batch succeeds.
func TestPageLimitOutcome(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.MaxPages = 2 })
	page := fixture.TextOp(50, 700, "Description") + fixture.TextOp(300, 700, "Qty") + fixture.TextOp(360, 700, "Price") + fixture.TextOp(450, 700, "Amount") +
		fixture.TextOp(50, 680, "Hex bolts M8") + fixture.TextOp(305, 680, "4") + fixture.TextOp(360, 680, "18.40") + fixture.TextOp(450, 680, "73.60")
	res := tn.processBatch("pages", map[string][]byte{
		"long.pdf":  fixture.PDF(page, page, page),
		"short.pdf": fixture.PDF(page, page),
	})
	for _, d := range res.Documents {
		switch d.FileName {
		case "long.pdf":
			if d.Status != "failed" || d.ProcessingError == nil || d.ProcessingError.Code != "too_many_pages" {
				t.Errorf("long.pdf: %+v", d)
			}
		case "short.pdf":
			if d.Status != "succeeded" || d.NumPages == nil || *d.NumPages != 2 || len(d.LineItems) != 2 || d.LineItems[1].Amount != 73.6 {
				t.Errorf("short.pdf: %+v", d)
			}
		}
	}
}

// TestRemoteExtractorWorker: with --extractor the worker's items come from
// the service (a real HTTP server on loopback), retried over a 503.
func TestRemoteExtractorWorker(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			FileName string `json:"file_name"`
			NumPages int    `json:"num_pages"`
		}
		if calls.Add(1) == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.FileName != "inv.txt" || req.NumPages != 1 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"currency":"JPY","line_items":[{"description":"Model item","quantity":2,"unit_price":500,"amount":1000}]}`))
	}))
	defer srv.Close()
	tn := setup(t, func(c *Config) { c.Extractor = srv.URL })
	res := tn.processBatch("remote", map[string][]byte{"inv.txt": textInvoice(1)})
	d := res.Documents[0]
	if d.Status != "succeeded" || d.Currency == nil || *d.Currency != "JPY" || len(d.LineItems) != 1 ||
		d.LineItems[0] != (lineItem{"Model item", 2, 500, 1000}) || calls.Load() != 2 {
		t.Errorf("document %+v after %d calls", d, calls.Load())
	}
}
