package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// generateEvents appends about n events shaped like real traffic, for
// measuring replay: orgs with keys, then documents in batches of ten, each
// uploaded (every fourth with an Idempotency-Key claim and its completion),
// queued, claimed, preprocessed and then succeeded with line items or (one
// in twenty) failed. Every event is valid for the folds, so a replay does
// the same work as on a real log.
func generateEvents(ctx context.Context, lf logFlags, n, orgs int, stdout io.Writer) error {
	if orgs < 1 {
		orgs = 1
	}
	seeds, err := seedsFrom(lf.brokers, lf.dataDir)
	if err != nil {
		return err
	}
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := eventstore.Open(openCtx, seeds, eventstore.Prefix(lf.prefix), eventstore.SchemaRegistry(lf.registry))
	if err != nil {
		return err
	}
	defer store.Close()
	start := time.Now()
	// Appends are pipelined: a bounded window of unacknowledged calls, so
	// the producer batches them while one org's events stay in order.
	const window = 512
	var waits []func() ([]eventstore.Position, error)
	flush := func(keep int) error {
		for len(waits) > keep {
			if _, err := waits[0](); err != nil {
				return err
			}
			waits = waits[1:]
		}
		return nil
	}
	written := 0
	push := func(evs ...domain.Event) error {
		waits = append(waits, store.AppendAsync(ctx, evs...))
		written += len(evs)
		return flush(window)
	}
	for o := 0; o < orgs && written < n; o++ {
		org := domain.OrgID(fmt.Sprintf("gen-%d", o))
		if err := push(&domain.OrgCreated{Meta: genMeta(org), Name: fmt.Sprintf("gen-%d", o)},
			&domain.ApiKeyIssued{Meta: genMeta(org), KeyID: eventstore.NewID("key_"), KeyHash: fmt.Sprintf("%064d", o), Label: "generated"}); err != nil {
			return err
		}
	}
	for d := 0; written < n; d++ {
		org := domain.OrgID(fmt.Sprintf("gen-%d", d%orgs))
		if err := push(documentLife(org, d)...); err != nil {
			return err
		}
	}
	if err := flush(0); err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(stdout, "generated %d events in %s: %.0f events/s\n", written, took.Round(time.Millisecond), float64(written)/took.Seconds())
	return nil
}

func genMeta(org string) domain.Meta { return eventstore.NewMeta(org, "generator", "") }

// documentLife is the events of document number d of org, from upload to
// its outcome.
func documentLife(org string, d int) []domain.Event {
	doc := eventstore.NewID("doc_")
	claim := eventstore.NewID("clm_")
	batch := fmt.Sprintf("batch-%d", d/10)
	ref := fmt.Sprintf("PO-%d", d)
	var evs []domain.Event
	key := fmt.Sprintf("idem-%d", d)
	idem := d%4 == 0
	if idem {
		evs = append(evs, &domain.IdempotencyKeyClaimed{Meta: genMeta(org), Key: key, RequestHash: fmt.Sprintf("%064x", d), ClaimID: claim})
	}
	evs = append(evs,
		&domain.DocumentUploaded{Meta: genMeta(org), DocumentID: doc, BatchName: &batch, FileName: fmt.Sprintf("invoice-%d.pdf", d),
			ContentType: "application/pdf", Size: 48213, BlobKey: fmt.Sprintf("sha256/%064x", d), Reference: &ref})
	if idem {
		evs = append(evs, &domain.IdempotencyKeyCompleted{Meta: genMeta(org), Key: key, ClaimID: claim, Status: 201,
			Body: []byte(`{"id":"` + doc + `","status":"queued"}`)})
	}
	evs = append(evs,
		&domain.DocumentQueued{Meta: genMeta(org), DocumentID: doc, Phase: domain.PhaseFull, Attempt: 1},
		&domain.ProcessingStarted{Meta: genMeta(org), DocumentID: doc, Phase: domain.PhasePreprocess, Attempt: 1, ClaimID: claim, Worker: "gen"},
		&domain.DocumentPreprocessed{Meta: genMeta(org), DocumentID: doc, ClaimID: claim, ContentType: "application/pdf", Pages: 2, TextChars: 1800})
	if d%20 == 19 {
		return append(evs, &domain.DocumentFailed{Meta: genMeta(org), DocumentID: doc, ClaimID: claim, Phase: domain.PhaseExtract,
			Code: "corrupt_document", Message: "no line items table"})
	}
	eur := "EUR"
	return append(evs, &domain.DocumentSucceeded{Meta: genMeta(org), DocumentID: doc, ClaimID: claim, Currency: &eur, LineItems: []domain.LineItem{
		{Description: "Widget A", Quantity: 2, UnitPrice: 1.5, Amount: 3},
		{Description: "Service fee", Quantity: 1, UnitPrice: 10, Amount: 10},
		{Description: "Shipping", Quantity: 1, UnitPrice: 4.9, Amount: 4.9},
	}})
}
