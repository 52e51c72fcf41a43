package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/extract"
)

// errStopRequested is the cause of a run stopped by a cancel work item.
var errStopRequested = errors.New("worker: stop requested")

// Worker processes work items with bounded concurrency.
type Worker struct {
	cfg   config
	store *eventstore.Store
	blobs blobstore.Store
	track *tracker

	mu       sync.Mutex
	inflight map[string]context.CancelFunc // document id -> cancel of its run
}

// New makes a worker; Run starts it.
func New(store *eventstore.Store, blobs blobstore.Store, opts ...Option) *Worker {
	cfg := config{concurrency: 4, timeout: 2 * time.Minute, maxPages: 500, name: "worker", extractor: extract.BuiltIn()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.extractor == nil {
		cfg.extractor = extract.BuiltIn()
	}
	return &Worker{cfg: cfg, store: store, blobs: blobs, track: newTracker(), inflight: map[string]context.CancelFunc{}}
}

// Run consumes the work topic until ctx ends, then waits for running
// documents to finish or be abandoned (their items stay uncommitted).
func (w *Worker) Run(ctx context.Context) error {
	forget := func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
		w.track.forget(lost[w.store.WorkTopic()])
	}
	g, err := w.store.JoinGroup(w.store.GroupName("workers"), w.store.WorkTopic(), w.cfg.instance,
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(500*time.Millisecond),
		kgo.OnPartitionsRevoked(forget), kgo.OnPartitionsLost(forget))
	if err != nil {
		return err
	}
	defer g.Close()
	sem := make(chan struct{}, w.cfg.concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		recs := g.Poll(ctx, w.cfg.concurrency)
		if ctx.Err() != nil {
			break
		}
		for _, rec := range recs {
			if item, err := eventstore.UnmarshalWork(rec.Value); err == nil && item.Cancel {
				// Stop requests bypass the slots: the run they stop holds one.
				w.track.start(rec.Partition, rec.Offset)
				w.handle(ctx, rec)()
				w.markDone(g, rec)
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			w.track.start(rec.Partition, rec.Offset)
			wg.Add(1)
			go func(rec *kgo.Record) {
				defer wg.Done()
				finish := w.handle(ctx, rec)
				// The slot is for processing; waiting for the result's
				// acknowledgement happens outside it, so slots stay busy
				// with work rather than with broker round trips.
				<-sem
				if finish() {
					w.markDone(g, rec)
				}
			}(rec)
		}
	}
	wg.Wait()
	commitCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return g.Client().CommitMarkedOffsets(commitCtx)
}

func (w *Worker) markDone(g *eventstore.Group, rec *kgo.Record) {
	if next := w.track.finish(rec.Partition, rec.Offset); next >= 0 {
		g.Client().MarkCommitOffsets(map[string]map[int32]kgo.EpochOffset{
			rec.Topic: {rec.Partition: {Epoch: rec.LeaderEpoch, Offset: next}},
		})
	}
}

// handle runs one item and returns a function that waits until the item's
// outcome is in the log (or it needs none) and reports whether its offset
// may be committed.
func (w *Worker) handle(ctx context.Context, rec *kgo.Record) func() bool {
	done := func(ok bool) func() bool { return func() bool { return ok } }
	item, err := eventstore.UnmarshalWork(rec.Value)
	if err != nil {
		w.cfg.log.Error().Err(err).Int64("offset", rec.Offset).Msg("malformed work item skipped")
		return done(true)
	}
	if item.Cancel {
		w.mu.Lock()
		if cancel := w.inflight[item.DocumentID]; cancel != nil {
			cancel()
		}
		w.mu.Unlock()
		return done(true)
	}
	if w.cfg.received != nil {
		w.cfg.received(item, rec.Timestamp)
	}
	if w.cfg.hold != nil {
		select {
		case <-w.cfg.hold:
		case <-ctx.Done():
			return done(false)
		}
	}
	wait := w.process(ctx, item)
	return func() bool { return wait() == nil }
}

func (w *Worker) process(ctx context.Context, item eventstore.WorkItem) (wait func() error) {
	fail := func(err error) func() error { return func() error { return err } }
	log := w.cfg.log.With().Str("org", item.OrgID).Str("document", item.DocumentID).Int("attempt", item.Attempt).Logger()
	claim := eventstore.NewID("clm_")
	first := domain.PhasePreprocess
	if item.Phase == domain.PhaseExtract {
		first = domain.PhaseExtract
	}
	meta := func() domain.Meta { return eventstore.NewMeta(item.OrgID, "worker:"+w.cfg.name, item.ID) }
	started := &domain.ProcessingStarted{
		Meta: meta(), DocumentID: item.DocumentID, Phase: first, Attempt: item.Attempt, ClaimID: claim, Worker: w.cfg.name,
	}
	// The claim is appended while the document is processed, and the
	// result right after it: the idempotent producer keeps one org's
	// records in order, so the log has the claim before the result. Both
	// acknowledgements are awaited outside the processing slot.
	claimed := w.store.AppendAsync(ctx, started)

	timed, cancelTimer := context.WithTimeout(ctx, w.cfg.timeout)
	defer cancelTimer()
	runCtx, stop := context.WithCancelCause(timed)
	defer stop(nil)
	w.mu.Lock()
	w.inflight[item.DocumentID] = func() { stop(errStopRequested) }
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.inflight, item.DocumentID)
		w.mu.Unlock()
	}()

	if w.cfg.afterClaim != nil {
		w.cfg.afterClaim(ctx, item)
	}
	began := time.Now()
	results, err := w.run(runCtx, item, claim, meta)
	if ctx.Err() != nil {
		// Shutting down: leave the item uncommitted so that the next owner
		// re-claims it, rather than recording a failure we did not see.
		return fail(ctx.Err())
	}
	if err != nil && errors.Is(context.Cause(runCtx), errStopRequested) {
		// Stopped on request (a job was cancelled): keep the phases that
		// finished, and end the run.
		log.Info().Msg("document stopped on request")
		results = append(results, &domain.DocumentCanceled{
			Meta: meta(), DocumentID: item.DocumentID, ClaimID: claim, Reason: "stopped on request",
		})
		err = nil
	}
	if err != nil {
		phase := first
		if len(results) > 0 {
			phase = domain.PhaseExtract
		}
		code := extract.Code(err)
		log.Info().Str("code", code).Err(err).Msg("document failed")
		results = append(results, &domain.DocumentFailed{
			Meta: meta(), DocumentID: item.DocumentID, ClaimID: claim, Phase: phase,
			Code: code, Message: err.Error(), Retryable: code == extract.CodeTimeout || code == extract.CodeInternal,
		})
	}
	w.observe(&log, item.Phase, results, time.Since(began))
	appended := w.store.AppendAsync(ctx, results...)
	return func() error {
		_, cerr := claimed()
		_, rerr := appended()
		if errors.Is(rerr, eventstore.ErrTooLarge) {
			// Sending the result again would fail again, forever: the
			// document fails instead, and says why.
			log.Warn().Err(rerr).Msg("result too large for the log; the document fails")
			phase := first
			for _, e := range results {
				if _, ok := e.(*domain.DocumentSucceeded); ok {
					phase = domain.PhaseExtract
				}
			}
			results = []domain.Event{&domain.DocumentFailed{
				Meta: meta(), DocumentID: item.DocumentID, ClaimID: claim, Phase: phase,
				Code: extract.CodeResultTooLarge, Message: "the extracted result is larger than one event on the log may be",
			}}
			if cerr == nil {
				return w.append(ctx, results...)
			}
			rerr = nil // the failure stands for the result: below, the claim goes first
		}
		if cerr == nil && rerr == nil {
			return nil
		}
		for _, err := range []error{cerr, rerr} {
			if err != nil && !errors.Is(err, eventstore.ErrUnavailable) {
				return err
			}
		}
		// A result that landed without its claim is a recorded no-op;
		// append both again, in order, now that the broker answers.
		if cerr != nil {
			if err := w.append(ctx, started); err != nil {
				return err
			}
		}
		return w.append(ctx, results...)
	}
}

// run does the phases and returns the result events; on error, the events
// of the phases that did succeed.
func (w *Worker) run(ctx context.Context, item eventstore.WorkItem, claim string, meta func() domain.Meta) ([]domain.Event, error) {
	data, err := w.read(ctx, item.BlobKey)
	if err != nil {
		return nil, err
	}
	opts := append([]extract.Option{extract.MaxPages(w.cfg.maxPages)}, w.cfg.extractOpts...)
	doc, err := extract.Preprocess(ctx, data, item.FileName, opts...)
	if !extract.Proceeds(w.cfg.extractor, doc, err) {
		return nil, err
	}
	var out []domain.Event
	if item.Phase != domain.PhaseExtract {
		out = append(out, &domain.DocumentPreprocessed{
			Meta: meta(), DocumentID: item.DocumentID, ClaimID: claim,
			ContentType: doc.ContentType, Pages: doc.Pages, TextChars: len([]rune(doc.Text)),
		})
	}
	if item.Phase == domain.PhasePreprocess {
		return out, nil
	}
	inv, err := w.cfg.extractor.ExtractItems(ctx, extract.Input{Doc: doc, Data: data, FileName: item.FileName})
	if err != nil {
		return out, err
	}
	items := make([]domain.LineItem, len(inv.Items))
	for i, it := range inv.Items {
		items[i] = domain.LineItem{Description: it.Description, Quantity: it.Quantity, UnitPrice: it.UnitPrice, Amount: it.Amount}
	}
	var currency *string
	if inv.Currency != "" {
		currency = &inv.Currency
	}
	return append(out, &domain.DocumentSucceeded{
		Meta: meta(), DocumentID: item.DocumentID, ClaimID: claim, Currency: currency, LineItems: items,
	}), nil
}

func (w *Worker) read(ctx context.Context, key string) ([]byte, error) {
	r, err := w.blobs.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("worker: blob %s: %w", key, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// append retries until the events are in the log or ctx ends: an outcome
// that is computed but not recorded would otherwise be redone.
func (w *Worker) append(ctx context.Context, events ...domain.Event) error {
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		_, err := w.store.Append(ctx, events...)
		if err == nil || !errors.Is(err, eventstore.ErrUnavailable) {
			return err
		}
		w.cfg.log.Warn().Err(err).Msg("append failed; retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}
