package domain

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Batch is the aggregate view of the documents uploaded under one name. It is
// maintained incrementally from document transitions (Track) and can always
// be recomputed from the documents themselves (Summarize).
type Batch struct {
	OrgID     string
	Name      string
	Documents int
	Counts    Counts

	CreatedAt   time.Time // earliest upload
	StartedAt   time.Time // earliest start among current documents
	CompletedAt time.Time // latest completion; shown only when nothing is in flight
}

// NewBatch starts an empty batch.
func NewBatch(org, name string) Batch {
	return Batch{OrgID: org, Name: name}
}

// Counts is how many of a batch's documents are in each public status,
// indexed like PublicStatuses. It is an array, not a map, because the fold
// moves a batch's counts for every event of every one of its documents:
// a value is copied with the batch for free, where a map had to be cloned
// on each move to keep Track from changing the batch it was given.
type Counts [5]int

// Of is the number of documents in status p (0 for a value outside the
// vocabulary).
func (c Counts) Of(p Public) int {
	if i := p.index(); i >= 0 {
		return c[i]
	}
	return 0
}

// Set sets the number of documents in status p and reports whether p is in
// the vocabulary; a value outside it changes nothing.
func (c *Counts) Set(p Public, n int) bool {
	i := p.index()
	if i >= 0 {
		c[i] = n
	}
	return i >= 0
}

// Track moves the batch along with one document transition. It reports
// whether the batch must be recomputed from its documents: that happens only
// when the document holding the earliest start or the latest completion loses
// it (it was requeued).
func (b Batch) Track(before, after Document) (Batch, bool) {
	if before.Status == "" {
		b.Documents++
		if b.CreatedAt.IsZero() || after.CreatedAt.Before(b.CreatedAt) {
			b.CreatedAt = after.CreatedAt
		}
	} else {
		b.Counts[before.Status.BatchStatus().index()]--
	}
	b.Counts[after.Status.BatchStatus().index()]++
	lostCompletion := !before.CompletedAt.IsZero() && before.CompletedAt.Equal(b.CompletedAt) && !after.CompletedAt.Equal(before.CompletedAt)

	if !after.StartedAt.IsZero() && (b.StartedAt.IsZero() || after.StartedAt.Before(b.StartedAt)) {
		b.StartedAt = after.StartedAt
	}
	if after.CompletedAt.After(b.CompletedAt) {
		b.CompletedAt = after.CompletedAt
	}
	lostStart := !before.StartedAt.IsZero() && before.StartedAt.Equal(b.StartedAt) && !after.StartedAt.Equal(before.StartedAt)
	return b, lostStart || lostCompletion
}

// Summarize recomputes a batch from all its documents.
func Summarize(org, name string, docs []Document) Batch {
	b := NewBatch(org, name)
	for _, d := range docs {
		b, _ = b.Track(Document{}, d)
	}
	return b
}

// Status applies the batch rule of DESIGN.md: processing if any document is
// running; else queued if any is waiting; else canceled if all were
// canceled, failed if every other document failed, otherwise succeeded.
func (b Batch) Status() Public {
	switch {
	case b.Counts.Of(PublicProcessing) > 0:
		return PublicProcessing
	case b.Counts.Of(PublicQueued) > 0 || b.Documents == 0:
		return PublicQueued
	case b.Counts.Of(PublicCanceled) == b.Documents:
		return PublicCanceled
	case b.Counts.Of(PublicFailed) == b.Documents-b.Counts.Of(PublicCanceled):
		return PublicFailed
	}
	return PublicSucceeded
}

// AllDone is true when the batch has documents and all are terminal.
func (b Batch) AllDone() bool {
	return b.Documents > 0 && b.Counts.Of(PublicQueued) == 0 && b.Counts.Of(PublicProcessing) == 0
}

// Timestamps returns created_at, started_at and completed_at as shown to
// clients: zero means null. completed_at is null while anything is in flight.
func (b Batch) Timestamps() (created, started, completed time.Time) {
	if b.AllDone() {
		completed = b.CompletedAt
	}
	return b.CreatedAt, b.StartedAt, completed
}

// ValidateBatchName accepts 1–128 characters of letters, digits, '.', '_'
// and '-', not starting with '.', so names are safe in paths, keys and URLs.
func ValidateBatchName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("%w: must be 1 to 128 characters", ErrInvalidBatchName)
	}
	if name[0] == '.' {
		return fmt.Errorf("%w: must not start with '.'", ErrInvalidBatchName)
	}
	for _, r := range name {
		ok := r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("%w: only letters, digits, '.', '_' and '-' are allowed", ErrInvalidBatchName)
		}
	}
	return nil
}

// ValidateReference accepts up to 256 characters of valid UTF-8 without
// control characters.
func ValidateReference(ref string) error {
	if !utf8.ValidString(ref) || utf8.RuneCountInString(ref) > 256 {
		return fmt.Errorf("%w: must be valid UTF-8 of at most 256 characters", ErrInvalidReference)
	}
	if strings.IndexFunc(ref, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: control characters are not allowed", ErrInvalidReference)
	}
	return nil
}
