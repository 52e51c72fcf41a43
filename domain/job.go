package domain

import (
	"slices"
	"time"
)

// Job kinds. A single-document preprocess job is not an aggregate of its
// own: it is one preprocess run of a document, derived from the document's
// fold (see DocumentJob), so it needs no events.
const (
	JobPreprocess = "preprocess" // POST /documents/process: a batch preprocess job
	JobExtraction = "extraction" // POST /extraction-sessions
)

// JobStatus is the jobs surface's vocabulary (spec/jobs.md). New internal
// states must map onto these six values, never add to them.
type JobStatus string

// The job statuses.
const (
	JobStatusQueued                JobStatus = "queued"
	JobStatusInProgress            JobStatus = "in_progress"
	JobStatusCompleted             JobStatus = "completed"
	JobStatusCompletedWithFailures JobStatus = "completed_with_failures"
	JobStatusFailed                JobStatus = "failed"
	JobStatusCancelled             JobStatus = "cancelled"
)

// Terminal reports whether the status is final (until a reopen).
func (s JobStatus) Terminal() bool {
	return s == JobStatusCompleted || s == JobStatusCompletedWithFailures || s == JobStatusFailed || s == JobStatusCancelled
}

// RowStatus is the status of one document in a job. A preprocess row is
// never queued: its document is in the job's hands from the start. An
// extraction row is queued until extraction itself starts (its document may
// be waiting for, or going through, preprocessing).
type RowStatus string

// The row statuses.
const (
	RowQueued     RowStatus = "queued"
	RowInProgress RowStatus = "in_progress"
	RowCompleted  RowStatus = "completed"
	RowFailed     RowStatus = "failed"
	RowCancelled  RowStatus = "cancelled"
)

// Terminal reports whether the row is done.
func (s RowStatus) Terminal() bool {
	return s == RowCompleted || s == RowFailed || s == RowCancelled
}

// PreprocessRow maps a document's state onto a preprocess row.
func PreprocessRow(d Document) RowStatus {
	switch {
	case d.Status == StatusCanceled:
		return RowCancelled
	case d.Status == StatusFailed && d.Error != nil && d.Error.Phase != PhaseExtract:
		return RowFailed
	case d.Status == StatusPreprocessed || d.Status == StatusExtracting || d.Status == StatusSucceeded ||
		d.Status == StatusFailed: // failed in extraction: preprocessing itself completed
		return RowCompleted
	}
	return RowInProgress
}

// ExtractionRow maps a document's state onto an extraction row.
func ExtractionRow(d Document) RowStatus {
	switch d.Status {
	case StatusExtracting:
		return RowInProgress
	case StatusSucceeded:
		return RowCompleted
	case StatusFailed:
		return RowFailed
	case StatusCanceled:
		return RowCancelled
	}
	return RowQueued
}

// Row is one document of a job.
type Row struct {
	DocumentID  string           `json:"document_id"`
	Status      RowStatus        `json:"status"`
	Error       *ProcessingError `json:"error,omitempty"`
	StartedAt   time.Time        `json:"started_at"`
	CompletedAt time.Time        `json:"completed_at"`
}

// Progress counts a job's rows.
type Progress struct {
	Done   int `json:"done" avro:"done"`
	Total  int `json:"total" avro:"total"`
	Failed int `json:"failed" avro:"failed"`
}

// Job is the state of a batch preprocess job or an extraction job.
type Job struct {
	ID              string
	OrgID           string
	Kind            string
	SessionID       string
	Rows            []Row
	Generation      int // bumped by every reopen; JobCompleted names the generation it ends
	CancelRequested bool
	Final           JobStatus // set by JobCompleted or JobCancelled; "" while open
	CreatedAt       time.Time
	StartedAt       time.Time
	CompletedAt     time.Time
	LastProgressAt  time.Time
}

// row returns the index of a document's row, or -1.
func (j Job) row(doc string) int {
	return slices.IndexFunc(j.Rows, func(r Row) bool { return r.DocumentID == doc })
}

// Covers reports whether the job has a row for the document.
func (j Job) Covers(doc string) bool { return j.row(doc) >= 0 }

// Track moves the job along with a document's state. Only a run that serves
// this job (its JobIDs name the job) moves a row; a terminal row stays as it
// ended until the job is reopened.
func (j Job) Track(d Document, at time.Time) Job {
	i := j.row(d.ID)
	if i < 0 || j.Rows[i].Status.Terminal() || !slices.Contains(d.JobIDs, j.ID) {
		return j
	}
	rows := slices.Clone(j.Rows)
	r := rows[i]
	if j.Kind == JobExtraction {
		r.Status = ExtractionRow(d)
	} else {
		r.Status = PreprocessRow(d)
	}
	if j.CancelRequested && !r.Status.Terminal() && d.Status != StatusQueued && !d.Status.Running() {
		// The run stopped on request before reaching this job's phase.
		r.Status = RowCancelled
	}
	r.Error = nil
	if r.Status == RowFailed && j.Kind == JobPreprocess {
		r.Error = d.Error
	}
	if r.StartedAt.IsZero() && !d.StartedAt.IsZero() {
		r.StartedAt = d.StartedAt
	}
	if r.Status.Terminal() {
		r.CompletedAt = at
	}
	if r == rows[i] {
		return j
	}
	rows[i] = r
	j.Rows = rows
	j.LastProgressAt = at
	if j.StartedAt.IsZero() && (!r.StartedAt.IsZero() || r.Status.Terminal()) {
		j.StartedAt = at
	}
	return j
}

// Progress counts the rows.
func (j Job) Progress() Progress {
	p := Progress{Total: len(j.Rows)}
	for _, r := range j.Rows {
		if r.Status.Terminal() {
			p.Done++
		}
		if r.Status == RowFailed {
			p.Failed++
		}
	}
	return p
}

// Status is the job's public status: the final one once recorded, else
// queued until a row starts, then in_progress.
func (j Job) Status() JobStatus {
	if j.Final != "" {
		return j.Final
	}
	if j.StartedAt.IsZero() {
		return JobStatusQueued
	}
	return JobStatusInProgress
}

// Outcome is what the coordinator records once every row is terminal:
// cancelled if cancellation was requested, failed if every row failed,
// completed_with_failures if some did, else completed. ok is false while a
// row is still open or the outcome is already recorded.
func (j Job) Outcome() (status JobStatus, p Progress, ok bool) {
	p = j.Progress()
	if j.Final != "" || p.Done < p.Total {
		return "", p, false
	}
	switch {
	case j.CancelRequested:
		return JobStatusCancelled, p, true
	case p.Total > 0 && p.Failed == p.Total:
		return JobStatusFailed, p, true
	case p.Failed > 0 || j.count(RowCancelled) > 0:
		return JobStatusCompletedWithFailures, p, true
	}
	return JobStatusCompleted, p, true
}

func (j Job) count(s RowStatus) int {
	n := 0
	for _, r := range j.Rows {
		if r.Status == s {
			n++
		}
	}
	return n
}

// Duration is the job's duration once terminal: the longest row for a batch
// preprocess job, created-to-completed for an extraction session.
func (j Job) Duration() (time.Duration, bool) {
	if !j.Status().Terminal() {
		return 0, false
	}
	if j.Kind == JobExtraction {
		return j.CompletedAt.Sub(j.CreatedAt), true
	}
	var longest time.Duration
	for _, r := range j.Rows {
		if !r.StartedAt.IsZero() && r.CompletedAt.Sub(r.StartedAt) > longest {
			longest = r.CompletedAt.Sub(r.StartedAt)
		}
	}
	return longest, true
}

// NewJob starts a job from its JobCreated. Preprocess rows start in
// progress, extraction rows queued.
func NewJob(e *JobCreated) Job {
	j := Job{ID: e.JobID, OrgID: e.Meta.OrgID, Kind: e.Kind, CreatedAt: e.Meta.OccurredAt, LastProgressAt: e.Meta.OccurredAt}
	if e.SessionID != nil {
		j.SessionID = *e.SessionID
	}
	first := RowInProgress
	if e.Kind == JobExtraction {
		first = RowQueued
	}
	for _, id := range e.DocumentIDs {
		if !j.Covers(id) {
			j.Rows = append(j.Rows, Row{DocumentID: id, Status: first})
		}
	}
	return j
}

// Adopt sets a new job's row from a document that needs no run for it: a
// document already preprocessed (for a preprocess job without force) or
// already extracted (for an extraction job) completes its row at once.
func (j Job) Adopt(d Document, force bool, at time.Time) Job {
	i := j.row(d.ID)
	if i < 0 || j.Rows[i].Status.Terminal() {
		return j
	}
	if d.BatchDeleted && d.Status == StatusCanceled {
		// Its batch was deleted: the document can never run again.
		rows := slices.Clone(j.Rows)
		rows[i].Status, rows[i].CompletedAt = RowCancelled, at
		j.Rows = rows
		return j
	}
	if force {
		return j
	}
	done := d.Status == StatusSucceeded
	if j.Kind == JobPreprocess {
		done = done || d.Status == StatusPreprocessed || d.Status == StatusExtracting ||
			(d.Status == StatusFailed && d.Error != nil && d.Error.Phase == PhaseExtract)
	}
	if !done || slices.Contains(d.JobIDs, j.ID) {
		return j
	}
	rows := slices.Clone(j.Rows)
	rows[i].Status, rows[i].StartedAt, rows[i].CompletedAt = RowCompleted, at, at
	j.Rows = rows
	if j.StartedAt.IsZero() {
		j.StartedAt = at
	}
	return j
}

// Apply folds a job event.
func (j Job) Apply(e Event) (Job, error) {
	at := e.Header().OccurredAt
	switch ev := e.(type) {
	case *JobCreated:
		if j.ID != "" {
			return j, ErrJobExists
		}
		return NewJob(ev), nil
	case *JobCancelRequested:
		if j.ID == "" {
			return j, ErrUnknownJob
		}
		if j.Status().Terminal() || j.CancelRequested {
			return j, ErrJobTerminal
		}
		j.CancelRequested = true
		return j, nil
	case *JobReopened:
		if j.ID == "" {
			return j, ErrUnknownJob
		}
		// A cancelled job stays cancelled: only a finished one reopens.
		if j.Kind != JobPreprocess || !j.Status().Terminal() || j.Status() == JobStatusCancelled || ev.Generation != j.Generation+1 {
			return j, ErrJobNotReopenable
		}
		rows := slices.Clone(j.Rows)
		for k := range rows {
			if slices.Contains(ev.DocumentIDs, rows[k].DocumentID) {
				rows[k] = Row{DocumentID: rows[k].DocumentID, Status: RowInProgress}
			}
		}
		j.Rows, j.Generation, j.Final, j.CompletedAt, j.LastProgressAt = rows, ev.Generation, "", time.Time{}, at
		j.CancelRequested = false
		return j, nil
	case *JobCompleted, *JobCancelled:
		gen, status := 0, JobStatusCancelled
		if c, ok := ev.(*JobCompleted); ok {
			gen, status = c.Generation, JobStatus(c.Status)
		} else {
			gen = ev.(*JobCancelled).Generation
		}
		want, _, ok := j.Outcome()
		if j.ID == "" || gen != j.Generation || !ok || want != status {
			return j, ErrJobNotDone
		}
		j.Final, j.CompletedAt, j.LastProgressAt = status, at, at
		return j, nil
	}
	return j, ErrUnknownJob
}

// DocumentJob is the single-document preprocess job of a document's current
// run: the handle that document.* webhooks carry. Its status follows the
// run's preprocess phase.
func DocumentJob(d Document) JobStatus {
	switch PreprocessRow(d) {
	case RowCompleted:
		return JobStatusCompleted
	case RowFailed:
		return JobStatusFailed
	case RowCancelled:
		return JobStatusCancelled
	}
	if d.StartedAt.IsZero() {
		return JobStatusQueued
	}
	return JobStatusInProgress
}

// CancelIdle cancels, once cancellation was requested, a row whose document
// has no run in flight for this job (it waits for one, or never started):
// nothing else would ever move it.
func (j Job) CancelIdle(d Document, at time.Time) Job {
	i := j.row(d.ID)
	if i < 0 || !j.CancelRequested || j.Rows[i].Status.Terminal() {
		return j
	}
	if (d.Status == StatusQueued || d.Status.Running()) && slices.Contains(d.JobIDs, j.ID) {
		return j
	}
	rows := slices.Clone(j.Rows)
	rows[i].Status, rows[i].CompletedAt = RowCancelled, at
	j.Rows, j.LastProgressAt = rows, at
	return j
}
