package domain

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// ProcessingError is the document-level failure shown as processing_error.
type ProcessingError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Phase     string `json:"phase,omitempty"`
	Retryable bool   `json:"retryable"`
}

// Document is the state of one document, rebuilt by folding its events.
type Document struct {
	ID          string
	OrgID       string
	BatchName   string // "" for documents uploaded without a batch
	FileName    string
	ContentType string
	Size        int64
	BlobKey     string
	Reference   string

	Status  Status
	Target  string // phase asked for by the current attempt
	Attempt int
	ClaimID string
	JobIDs  []string

	Pages     int
	TextChars int
	Currency  string
	LineItems []LineItem
	Error     *ProcessingError

	BatchDeleted bool

	// Pending holds jobs that asked, while a run was in flight, for a phase
	// that run does not perform; the dispatcher queues them once it ends.
	Pending *PendingRun `json:",omitempty"`
	// Runs records the preprocess outcome of recent runs: each is the
	// single-document preprocess job of that attempt (newest last, at most
	// MaxRuns).
	Runs []Run `json:",omitempty"`

	CreatedAt   time.Time
	QueuedAt    time.Time
	StartedAt   time.Time
	CompletedAt time.Time
}

// PendingRun is work asked for while another run was in flight.
type PendingRun struct {
	Phase  string
	JobIDs []string
}

// Run is the preprocess outcome of one attempt.
type Run struct {
	Attempt     int
	Status      JobStatus
	Pages       int
	Error       *ProcessingError `json:",omitempty"`
	CreatedAt   time.Time
	StartedAt   time.Time
	CompletedAt time.Time
}

// MaxRuns bounds Document.Runs; older single-document jobs are forgotten.
const MaxRuns = 20

// Apply folds one event into the document. It never mutates d. A refused
// event returns d unchanged and an error for which IsNoop is true.
func (d Document) Apply(e Event) (Document, error) {
	next, err := d.apply(e)
	if err != nil {
		return d, err
	}
	return next.recordRun(d, e.Header().OccurredAt), nil
}

// Run returns the record of an attempt's single-document preprocess job:
// the current attempt's is derived from the live state.
func (d Document) Run(attempt int) (Run, bool) {
	if attempt == d.Attempt && attempt > 0 {
		r := Run{Attempt: attempt, Status: DocumentJob(d), Pages: d.Pages, CreatedAt: d.QueuedAt, StartedAt: d.StartedAt}
		if r.Status.Terminal() {
			if i := slices.IndexFunc(d.Runs, func(r Run) bool { return r.Attempt == attempt }); i >= 0 {
				return d.Runs[i], true
			}
		}
		if PreprocessRow(d) == RowFailed {
			r.Error = d.Error
		}
		return r, true
	}
	i := slices.IndexFunc(d.Runs, func(r Run) bool { return r.Attempt == attempt })
	if i < 0 {
		return Run{}, false
	}
	return d.Runs[i], true
}

// recordRun notes the end of the current attempt's preprocess phase.
func (d Document) recordRun(before Document, at time.Time) Document {
	if d.Attempt == 0 {
		return d
	}
	was, now := DocumentJob(before), DocumentJob(d)
	if before.Attempt == d.Attempt && was.Terminal() || !now.Terminal() {
		return d
	}
	r := Run{Attempt: d.Attempt, Status: now, Pages: d.Pages, CreatedAt: d.QueuedAt, StartedAt: d.StartedAt, CompletedAt: at}
	if now == JobStatusFailed {
		r.Error = d.Error
	}
	runs := append(slices.Clone(d.Runs), r)
	if len(runs) > MaxRuns {
		runs = runs[len(runs)-MaxRuns:]
	}
	d.Runs = runs
	return d
}

func (d Document) apply(e Event) (Document, error) {
	at := e.Header().OccurredAt
	switch ev := e.(type) {
	case *DocumentUploaded:
		if d.Status != "" {
			return d, ErrDocumentExists
		}
		n := Document{
			ID: ev.DocumentID, OrgID: ev.Meta.OrgID, FileName: ev.FileName,
			ContentType: ev.ContentType, Size: ev.Size, BlobKey: ev.BlobKey,
			Status: StatusUploaded, CreatedAt: at,
		}
		if ev.BatchName != nil {
			n.BatchName = *ev.BatchName
		}
		if ev.Reference != nil {
			n.Reference = *ev.Reference
		}
		return n, nil

	case *DocumentQueued:
		inFlight := d.Status == StatusQueued || d.Status.Running()
		if len(ev.JobIDs) > 0 && inFlight && ev.Attempt == d.Attempt && covers(d.Target, ev.Phase) {
			// A job asking for what the current run already does joins it
			// instead of queueing a second run.
			d.JobIDs = union(d.JobIDs, ev.JobIDs)
			return d, nil
		}
		if len(ev.JobIDs) > 0 && inFlight && ev.Attempt == d.Attempt+1 {
			// A job asking for more than the current run does waits for it.
			p := PendingRun{Phase: ev.Phase}
			if d.Pending != nil {
				p = PendingRun{Phase: widest(d.Pending.Phase, ev.Phase), JobIDs: d.Pending.JobIDs}
			}
			p.JobIDs = union(p.JobIDs, ev.JobIDs)
			d.Pending = &p
			return d, nil
		}
		if err := d.checkQueue(ev.Phase, ev.Force); err != nil {
			return d, err
		}
		if ev.Attempt != d.Attempt+1 {
			return d, fmt.Errorf("%w: attempt %d after %d", ErrStaleAttempt, ev.Attempt, d.Attempt)
		}
		d.Status, d.Target, d.Attempt, d.ClaimID, d.QueuedAt = StatusQueued, ev.Phase, ev.Attempt, "", at
		d.JobIDs = append([]string(nil), ev.JobIDs...)
		if d.Pending != nil && covers(ev.Phase, d.Pending.Phase) {
			d.JobIDs, d.Pending = union(d.JobIDs, d.Pending.JobIDs), nil
		}
		d.StartedAt, d.CompletedAt, d.Error = time.Time{}, time.Time{}, nil
		d.LineItems, d.Currency = nil, "" // a new run must not show the last one's results
		return d, nil

	case *ProcessingStarted:
		if ev.Attempt != d.Attempt {
			return d, ErrStaleAttempt
		}
		switch {
		case d.Status == StatusQueued:
			d.StartedAt = at
		case d.Status.Running() && ev.ClaimID == d.ClaimID:
			return d, ErrDuplicateClaim
		case d.Status.Running():
			// A later claim supersedes: the earlier worker died or lost its
			// work item. Its results are fenced off from now on.
		default:
			return d, fmt.Errorf("%w (%s)", ErrNotClaimable, d.Status)
		}
		d.ClaimID = ev.ClaimID
		d.Status = StatusPreprocessing
		if ev.Phase == PhaseExtract {
			d.Status = StatusExtracting
		}
		return d, nil

	case *DocumentPreprocessed:
		if err := d.checkResult(ev.ClaimID, StatusPreprocessing); err != nil {
			return d, err
		}
		d.ContentType, d.Pages, d.TextChars = ev.ContentType, ev.Pages, ev.TextChars
		if d.Target == PhasePreprocess {
			d.Status, d.CompletedAt = StatusPreprocessed, at
		} else {
			d.Status = StatusExtracting
		}
		return d, nil

	case *DocumentSucceeded:
		if err := d.checkResult(ev.ClaimID, StatusExtracting); err != nil {
			return d, err
		}
		if err := CheckLineItems(ev.LineItems); err != nil {
			return d, err
		}
		d.Status, d.CompletedAt = StatusSucceeded, at
		d.LineItems = append([]LineItem{}, ev.LineItems...)
		d.Currency = ""
		if ev.Currency != nil {
			d.Currency = *ev.Currency
		}
		return d, nil

	case *DocumentFailed:
		if err := d.checkResult(ev.ClaimID, ""); err != nil {
			return d, err
		}
		d.Status, d.CompletedAt = StatusFailed, at
		d.Error = &ProcessingError{Code: ev.Code, Message: ev.Message, Phase: ev.Phase, Retryable: ev.Retryable}
		return d, nil

	case *DocumentCanceled:
		if ev.ClaimID != "" {
			// The worker stopped a running run: preprocessing it finished
			// is kept.
			if err := d.checkResult(ev.ClaimID, ""); err != nil {
				return d, err
			}
			if d.Status == StatusExtracting {
				d.Status, d.CompletedAt = StatusPreprocessed, at
				return d, nil
			}
			d.Status, d.CompletedAt = StatusCanceled, at
			return d, nil
		}
		if err := d.checkCancel(); err != nil {
			return d, err
		}
		d.Status, d.CompletedAt = StatusCanceled, at
		return d, nil

	case *BatchDeleted:
		if d.Status == "" || d.BatchName != ev.BatchName || d.BatchDeleted {
			return d, ErrUnknownDocument
		}
		d.BatchDeleted = true
		// Preprocessed counts as not started: on the batch surface it is queued.
		if d.checkCancel() == nil || d.Status == StatusPreprocessed {
			d.Status, d.CompletedAt = StatusCanceled, at
		}
		return d, nil
	}
	return d, fmt.Errorf("%w: %s does not apply to documents", ErrUnknownDocument, e.Type())
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// widest returns the phase that performs both.
func widest(a, b string) string {
	if a == b {
		return a
	}
	return PhaseFull
}

// FollowUp returns the run the dispatcher must queue for pending jobs once
// the document's current run has ended, or nil.
func (d Document) FollowUp(meta Meta) *DocumentQueued {
	if d.Pending == nil || d.Status == StatusQueued || d.Status.Running() {
		return nil
	}
	return d.NextQueue(meta, d.Pending.Phase, d.Pending.JobIDs, true)
}

// covers reports whether a run with target also performs phase.
func covers(target, phase string) bool {
	return target == phase || target == PhaseFull
}

func (d Document) checkQueue(phase string, force bool) error {
	switch {
	case d.Status == "":
		return ErrUnknownDocument
	case d.BatchDeleted:
		return ErrBatchDeleted
	case d.Status == StatusQueued || d.Status.Running():
		return ErrAlreadyQueued
	case d.Status == StatusSucceeded && !force:
		return ErrAlreadyDone
	case d.Status == StatusPreprocessed && phase == PhasePreprocess && !force:
		return ErrAlreadyDone
	}
	return nil
}

func (d Document) checkResult(claim string, want Status) error {
	if !d.Status.Running() {
		return fmt.Errorf("%w: document is %s", ErrFencedClaim, d.Status)
	}
	if claim != d.ClaimID {
		return ErrFencedClaim
	}
	if want != "" && d.Status != want {
		return fmt.Errorf("%w: document is %s", ErrWrongPhase, d.Status)
	}
	return nil
}

// CheckLineItems returns ErrInvalidResult if a line item's quantity, unit
// price or amount is NaN or infinite. Avro's doubles allow them, JSON has
// no such numbers, and the API, the webhooks and the history render line
// items as JSON; docket's extractors never produce them (a remote
// extractor's answer with one is refused as malformed). So a success
// carrying one comes from another writer of the log, and the fold refuses
// it rather than keep a document no view can render.
func CheckLineItems(items []LineItem) error {
	for i, it := range items {
		for _, f := range [...]float64{it.Quantity, it.UnitPrice, it.Amount} {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("%w: line item %d", ErrInvalidResult, i)
			}
		}
	}
	return nil
}

func (d Document) checkCancel() error {
	switch {
	case d.Status == "":
		return ErrUnknownDocument
	case d.Status == StatusUploaded || d.Status == StatusQueued:
		return nil
	case d.Status == StatusCanceled:
		return ErrDocumentCanceled
	}
	return fmt.Errorf("%w (%s)", ErrAlreadyStarted, d.Status)
}

// CanQueue is the command check behind "process": it reports whether a
// processing request for phase would be accepted by the fold right now.
func (d Document) CanQueue(phase string, force bool) error { return d.checkQueue(phase, force) }

// WantsProcessing reports whether the batch surface's process should queue
// the document: never processed yet, or failed and retryFailed is set.
func (d Document) WantsProcessing(retryFailed bool) bool {
	switch d.Status {
	case StatusUploaded, StatusPreprocessed:
		return !d.BatchDeleted
	case StatusFailed:
		return retryFailed && !d.BatchDeleted
	}
	return false
}

// NextQueue builds the DocumentQueued event for the document's next attempt.
func (d Document) NextQueue(meta Meta, phase string, jobIDs []string, force bool) *DocumentQueued {
	if phase == PhaseFull && d.Status == StatusPreprocessed {
		phase = PhaseExtract
	}
	return &DocumentQueued{Meta: meta, DocumentID: d.ID, Phase: phase, Attempt: d.Attempt + 1, JobIDs: jobIDs, Force: force}
}

// QueueFor builds the DocumentQueued that gets phase done for jobs: joining
// the run in flight when that run performs phase, waiting for it when it
// does not, or a new run. It returns nil when the document needs no run
// (already done and not forced); the job's row then completes at once.
func (d Document) QueueFor(meta Meta, phase string, jobIDs []string, force bool) *DocumentQueued {
	inFlight := d.Status == StatusQueued || d.Status.Running()
	switch {
	case inFlight && covers(d.Target, phase):
		return &DocumentQueued{Meta: meta, DocumentID: d.ID, Phase: phase, Attempt: d.Attempt, JobIDs: jobIDs, Force: force}
	case inFlight:
		return &DocumentQueued{Meta: meta, DocumentID: d.ID, Phase: phase, Attempt: d.Attempt + 1, JobIDs: jobIDs, Force: force}
	case phase == PhaseExtract && d.Status != StatusPreprocessed:
		return d.QueueFor(meta, PhaseFull, jobIDs, force)
	case d.CanQueue(phase, force) == nil:
		return d.NextQueue(meta, phase, jobIDs, force)
	}
	return nil
}
