package main

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus")

type expected struct {
	Outcome   string     `json:"outcome"`
	Currency  *string    `json:"currency"`
	NumPages  int        `json:"num_pages"`
	LineItems []lineItem `json:"line_items"`
}

func corpus(t *testing.T, name string) ([]byte, expected) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatalf("corpus file %s: %v (the suite needs ../shared/corpus next to the repo)", name, err)
	}
	var exp expected
	ext := filepath.Ext(name)
	raw, err := os.ReadFile(filepath.Join(corpusDir, name[:len(name)-len(ext)]+".expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	return data, exp
}

func sameItems(t *testing.T, doc string, got, want []lineItem) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d line items, want %d: %+v", doc, len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Description != w.Description || math.Abs(g.Amount-w.Amount) > 0.005 ||
			math.Abs(g.Quantity-w.Quantity) > 1e-9 || math.Abs(g.UnitPrice-w.UnitPrice) > 0.005 {
			t.Errorf("%s item %d = %+v, want %+v", doc, i, g, w)
		}
	}
}

// TestBatchLifecycle drives the batch surface of spec/batches.md end to end:
// upload (one corrupt, one empty), process, poll until all_done, results, and
// the timestamp chain at document and batch level.
func TestBatchLifecycle(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	tn := setup(t, func(c *Config) { c.holdWorker = hold })
	files := []string{"inv-quickfix-it-usd.txt", "inv-datasync-cloud-usd.csv", "inv-koenig-buero-eur.csv", "inv-pacific-usd-truncated.pdf"}
	ids := map[string]string{}
	for i, f := range files {
		data, _ := corpus(t, f)
		d, code := tn.upload("lifecycle", f, data, "ref-"+f)
		if code != http.StatusCreated {
			t.Fatalf("upload %s: %d", f, code)
		}
		if d.Status != "queued" || d.CreatedAt == nil || d.StartedAt != nil || d.CompletedAt != nil {
			t.Fatalf("fresh upload %s = %+v", f, d)
		}
		ids[f] = d.ID
		// Read your writes: the document is visible at once.
		var again docView
		if code := tn.get("/v1/documents/"+d.ID, &again); code != http.StatusOK || again.ID != d.ID {
			t.Fatalf("GET right after upload %d: %d %+v", i, code, again)
		}
	}
	var env errorView
	body, ct := multipartBody(t, "empty.txt", nil, "")
	if code := tn.do("POST", "/v1/batches/lifecycle/documents", body, ct, nil, &env); code != http.StatusBadRequest || env.Error.Code != "empty_file" || env.Error.RequestID == "" {
		t.Fatalf("empty upload: %d %+v", code, env)
	}

	b := tn.waitBatch("lifecycle", func(b batchView) bool { return true })
	if b.Status != "queued" || b.Total != 4 || b.AllDone || b.StartedAt != nil || b.CompletedAt != nil || b.CreatedAt == nil {
		t.Fatalf("batch before process = %+v", b)
	}
	var proc struct {
		Queued int `json:"queued"`
	}
	if code := tn.do("POST", "/v1/batches/lifecycle/process", nil, "", nil, &proc); code != http.StatusAccepted || proc.Queued != 4 {
		t.Fatalf("process: %d %+v", code, proc)
	}
	// Held worker: queued documents show no started_at.
	for _, d := range tn.results("lifecycle").Documents {
		if d.Status != "queued" || d.StartedAt != nil || d.CompletedAt != nil {
			t.Fatalf("queued document = %+v", d)
		}
	}
	close(hold)
	b = tn.waitBatch("lifecycle", func(b batchView) bool { return b.AllDone })
	if b.Status != "succeeded" || b.Counts["succeeded"] != 3 || b.Counts["failed"] != 1 || b.StartedAt == nil || b.CompletedAt == nil {
		t.Fatalf("batch done = %+v", b)
	}
	res := tn.results("lifecycle")
	var latest time.Time
	for _, d := range res.Documents {
		data, exp := corpus(t, d.FileName)
		_ = data
		if d.StartedAt == nil || d.CompletedAt == nil || d.CompletedAt.Before(*d.StartedAt) || d.StartedAt.Before(*d.CreatedAt) {
			t.Fatalf("%s timestamps %+v", d.FileName, d)
		}
		if d.CompletedAt.After(latest) {
			latest = *d.CompletedAt
		}
		if d.Reference == nil || *d.Reference != "ref-"+d.FileName {
			t.Errorf("%s reference = %v", d.FileName, d.Reference)
		}
		switch exp.Outcome {
		case "succeeded":
			if d.Status != "succeeded" || d.ProcessingError != nil {
				t.Fatalf("%s = %+v", d.FileName, d)
			}
			sameItems(t, d.FileName, d.LineItems, exp.LineItems)
			if d.Currency == nil || exp.Currency == nil || *d.Currency != *exp.Currency {
				t.Errorf("%s currency %v want %v", d.FileName, d.Currency, exp.Currency)
			}
		case "failed":
			if d.Status != "failed" || d.ProcessingError == nil || d.ProcessingError.Code != "corrupt_document" || len(d.LineItems) != 0 {
				t.Fatalf("%s = %+v", d.FileName, d)
			}
		}
	}
	if !b.CompletedAt.Equal(latest) {
		t.Fatalf("batch completed_at %v, latest document completion %v", b.CompletedAt, latest)
	}

	// New documents after completion: completed_at null again, all_done
	// false, and processing again queues only the new one.
	data, _ := corpus(t, "inv-tinytools-gbp.txt")
	if _, code := tn.upload("lifecycle", "inv-tinytools-gbp.txt", data, ""); code != http.StatusCreated {
		t.Fatalf("second upload: %d", code)
	}
	b = tn.waitBatch("lifecycle", func(b batchView) bool { return true })
	if b.AllDone || b.CompletedAt != nil || b.Status != "queued" || b.Total != 5 {
		t.Fatalf("batch after new upload = %+v", b)
	}
	if code := tn.do("POST", "/v1/batches/lifecycle/process", nil, "", nil, &proc); code != http.StatusAccepted || proc.Queued != 1 {
		t.Fatalf("second process: %d %+v", code, proc)
	}
	b = tn.waitBatch("lifecycle", func(b batchView) bool { return b.AllDone })
	if b.CompletedAt == nil || !b.CompletedAt.After(latest) || b.Counts["succeeded"] != 4 {
		t.Fatalf("batch after second run = %+v (first completion %v)", b, latest)
	}
	// retry_failed requeues the corrupt one, which fails again.
	if code := tn.do("POST", "/v1/batches/lifecycle/process?retry_failed=true", nil, "", nil, &proc); code != http.StatusAccepted || proc.Queued != 1 {
		t.Fatalf("retry_failed: %d %+v", code, proc)
	}
	b = tn.waitBatch("lifecycle", func(b batchView) bool { return b.AllDone })
	var corrupt docView
	tn.get("/v1/documents/"+ids["inv-pacific-usd-truncated.pdf"], &corrupt)
	if corrupt.Status != "failed" || corrupt.ProcessingError == nil {
		t.Fatalf("retried corrupt document = %+v", corrupt)
	}
	tn.verify()
}
