package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestAnotherWritersNaNResultIsRefused: Avro's doubles allow NaN and the
// infinities, JSON has neither, and docket's extractors never produce
// them. A DocumentSucceeded carrying one can only come from another writer
// of the log, and the fold refuses it like any other illegal event: the
// document, its batch's results and its history still answer 200, without
// it, and the document's real result lands after it.
func TestAnotherWritersNaNResultIsRefused(t *testing.T) {
	t.Parallel()
	// No worker: the test plays it, and another writer.
	tn := setup(t, func(c *Config) { c.Roles = "api,projections,duties" })
	doc, code := tn.upload("foreign", "inv.txt", textInvoice(0), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/foreign/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	org, claim := domain.OrgID("default"), eventstore.NewID("clm_")
	meta := func() domain.Meta { return eventstore.NewMeta(org, "worker:test", "") }
	refusedBefore := tn.n.views.Noops()
	pos, err := tn.n.store.Append(ctx,
		&domain.ProcessingStarted{Meta: meta(), DocumentID: doc.ID, Phase: domain.PhaseFull, Attempt: 1, ClaimID: claim, Worker: "test"},
		&domain.DocumentPreprocessed{Meta: meta(), DocumentID: doc.ID, ClaimID: claim, ContentType: "text/plain", Pages: 1, TextChars: 100},
		&domain.DocumentSucceeded{Meta: meta(), DocumentID: doc.ID, ClaimID: claim,
			LineItems: []domain.LineItem{{Description: "x", Quantity: 1, UnitPrice: math.NaN(), Amount: math.Inf(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.n.views.WaitAll(ctx, pos); err != nil {
		t.Fatal(err)
	}
	if n := tn.n.views.Noops() - refusedBefore; n != 1 {
		t.Fatalf("%d events refused, want the NaN result", n)
	}
	// Before the fold refused it, the document took the result, and its
	// GET answered 200 with a body cut short where JSON met the NaN.
	var d docView
	if code := tn.get("/v1/documents/"+doc.ID, &d); code != http.StatusOK || d.ID != doc.ID || d.Status != "processing" || len(d.LineItems) != 0 {
		t.Fatalf("GET the document after the NaN result: %d %+v", code, d)
	}
	if r := tn.results("foreign"); r.Batch.AllDone {
		t.Fatalf("the batch after the NaN result: %+v", r.Batch)
	}
	for _, e := range tn.history("/v1/documents/"+doc.ID+"/history", 100) {
		if e.Type == "DocumentSucceeded" {
			t.Fatalf("the refused result is in the history: %+v", e)
		}
	}
	pos, err = tn.n.store.Append(ctx, &domain.DocumentSucceeded{Meta: meta(), DocumentID: doc.ID, ClaimID: claim,
		LineItems: []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 1.5, Amount: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.n.views.WaitAll(ctx, pos); err != nil {
		t.Fatal(err)
	}
	if code := tn.get("/v1/documents/"+doc.ID, &d); code != http.StatusOK || d.ID != doc.ID || d.Status != "succeeded" || len(d.LineItems) != 1 || d.LineItems[0].Amount != 3 {
		t.Fatalf("GET the document after its real result: %d %+v", code, d)
	}
	// An audit lists the refused result, without the payload JSON cannot
	// carry, and reads on to the real one.
	out, err := tn.cli("events", "--document", doc.ID, "--type", "DocumentSucceeded")
	if err != nil {
		t.Fatalf("docket events: %v", err)
	}
	var lines []eventLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var line eventLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("docket events wrote %q: %v", l, err)
		}
		lines = append(lines, line)
	}
	if len(lines) != 2 || lines[0].Payload != nil || !strings.Contains(lines[0].Error, "NaN") || lines[0].Meta == nil ||
		lines[1].Error != "" || lines[1].Payload["line_items"] == nil {
		t.Fatalf("docket events of the two results: %s", out)
	}
}
