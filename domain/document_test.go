package domain_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// seq builds events whose OccurredAt increases by one second per event.
// With skew set, each time is moved by skew() to model node clocks that
// disagree (log order then no longer matches time order).
type seq struct {
	t    time.Time
	n    int
	skew func() time.Duration
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newSeq() *seq { return &seq{t: t0} }

func (s *seq) meta() domain.Meta {
	s.n++
	s.t = s.t.Add(time.Second)
	at := s.t
	if s.skew != nil {
		at = at.Add(s.skew())
	}
	return domain.Meta{EventID: fmt.Sprintf("ev-%d", s.n), OrgID: "org_acme", OccurredAt: at, Actor: "test"}
}

func (s *seq) upload(id, batch string) *domain.DocumentUploaded {
	e := &domain.DocumentUploaded{Meta: s.meta(), DocumentID: id, FileName: id + ".pdf", ContentType: "application/pdf", Size: 42, BlobKey: "blob-" + id}
	if batch != "" {
		e.BatchName = &batch
	}
	return e
}

func (s *seq) queue(id, phase string, attempt int, force bool, jobs ...string) *domain.DocumentQueued {
	return &domain.DocumentQueued{Meta: s.meta(), DocumentID: id, Phase: phase, Attempt: attempt, Force: force, JobIDs: jobs}
}

func (s *seq) claim(id, phase string, attempt int, claim string) *domain.ProcessingStarted {
	return &domain.ProcessingStarted{Meta: s.meta(), DocumentID: id, Phase: phase, Attempt: attempt, ClaimID: claim, Worker: "w-" + claim}
}

func (s *seq) preprocessed(id, claim string) *domain.DocumentPreprocessed {
	return &domain.DocumentPreprocessed{Meta: s.meta(), DocumentID: id, ClaimID: claim, ContentType: "application/pdf", Pages: 3, TextChars: 1200}
}

func (s *seq) succeeded(id, claim string, items ...domain.LineItem) *domain.DocumentSucceeded {
	return &domain.DocumentSucceeded{Meta: s.meta(), DocumentID: id, ClaimID: claim, LineItems: items}
}

func (s *seq) failed(id, claim, phase string) *domain.DocumentFailed {
	return &domain.DocumentFailed{Meta: s.meta(), DocumentID: id, ClaimID: claim, Phase: phase, Code: "unreadable", Message: "cannot parse", Retryable: true}
}

func (s *seq) cancel(id string) *domain.DocumentCanceled {
	return &domain.DocumentCanceled{Meta: s.meta(), DocumentID: id, Reason: "user"}
}

func (s *seq) deleteBatch(name string) *domain.BatchDeleted {
	return &domain.BatchDeleted{Meta: s.meta(), BatchName: name}
}

// fold applies events in order to a fresh document and requires every one to be legal.
func fold(t *testing.T, evs ...domain.Event) domain.Document {
	t.Helper()
	var d domain.Document
	for i, e := range evs {
		n, err := d.Apply(e)
		if err != nil {
			t.Fatalf("setup event %d (%s): %v", i, e.Type(), err)
		}
		d = n
	}
	return d
}

// Prefixes shared by the tables: "d" in batch "b".
func uploaded(s *seq) []domain.Event { return []domain.Event{s.upload("d", "b")} }
func queued(s *seq, phase string) []domain.Event {
	return append(uploaded(s), s.queue("d", phase, 1, false, "job-1"))
}
func running(s *seq, phase string) []domain.Event {
	return append(queued(s, phase), s.claim("d", phase, 1, "c1"))
}
func extracting(s *seq) []domain.Event {
	return append(running(s, domain.PhaseFull), s.preprocessed("d", "c1"))
}
func succeededDoc(s *seq) []domain.Event {
	return append(extracting(s), s.succeeded("d", "c1", domain.LineItem{Description: "x", Amount: 1}))
}
func failedDoc(s *seq) []domain.Event {
	return append(running(s, domain.PhaseFull), s.failed("d", "c1", domain.PhasePreprocess))
}
func preprocessedDoc(s *seq) []domain.Event {
	return append(running(s, domain.PhasePreprocess), s.preprocessed("d", "c1"))
}
func canceledDoc(s *seq) []domain.Event { return append(uploaded(s), s.cancel("d")) }

// with appends the event under test to a prefix.
func with(prefix []domain.Event, e domain.Event) []domain.Event { return append(prefix, e) }

func TestDocumentLegalTransitions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		events  func(s *seq) []domain.Event // the last one is under test
		status  domain.Status
		target  string
		attempt int
		claim   string
	}{
		{"upload", uploaded, domain.StatusUploaded, "", 0, ""},
		{"queue full", func(s *seq) []domain.Event { return queued(s, domain.PhaseFull) }, domain.StatusQueued, domain.PhaseFull, 1, ""},
		{"queue preprocess", func(s *seq) []domain.Event { return queued(s, domain.PhasePreprocess) }, domain.StatusQueued, domain.PhasePreprocess, 1, ""},
		{"queue extract", func(s *seq) []domain.Event { return queued(s, domain.PhaseExtract) }, domain.StatusQueued, domain.PhaseExtract, 1, ""},
		{"claim full from queued", func(s *seq) []domain.Event { return running(s, domain.PhaseFull) }, domain.StatusPreprocessing, domain.PhaseFull, 1, "c1"},
		{"claim extract from queued", func(s *seq) []domain.Event { return running(s, domain.PhaseExtract) }, domain.StatusExtracting, domain.PhaseExtract, 1, "c1"},
		{"superseding claim while preprocessing", func(s *seq) []domain.Event {
			return with(running(s, domain.PhaseFull), s.claim("d", domain.PhaseFull, 1, "c2"))
		}, domain.StatusPreprocessing, domain.PhaseFull, 1, "c2"},
		{"superseding claim while extracting", func(s *seq) []domain.Event {
			return with(running(s, domain.PhaseExtract), s.claim("d", domain.PhaseExtract, 1, "c2"))
		}, domain.StatusExtracting, domain.PhaseExtract, 1, "c2"},
		{"preprocessed -> extracting for full", extracting, domain.StatusExtracting, domain.PhaseFull, 1, "c1"},
		{"preprocessed terminal for preprocess", preprocessedDoc, domain.StatusPreprocessed, domain.PhasePreprocess, 1, "c1"},
		{"succeeded", succeededDoc, domain.StatusSucceeded, domain.PhaseFull, 1, "c1"},
		{"failed while preprocessing", failedDoc, domain.StatusFailed, domain.PhaseFull, 1, "c1"},
		{"failed while extracting", func(s *seq) []domain.Event {
			return with(extracting(s), s.failed("d", "c1", domain.PhaseExtract))
		}, domain.StatusFailed, domain.PhaseFull, 1, "c1"},
		{"cancel uploaded", canceledDoc, domain.StatusCanceled, "", 0, ""},
		{"cancel queued", func(s *seq) []domain.Event { return with(queued(s, domain.PhaseFull), s.cancel("d")) }, domain.StatusCanceled, domain.PhaseFull, 1, ""},
		{"requeue failed (retry)", func(s *seq) []domain.Event {
			return with(failedDoc(s), s.queue("d", domain.PhaseFull, 2, false))
		}, domain.StatusQueued, domain.PhaseFull, 2, ""},
		{"requeue succeeded with force", func(s *seq) []domain.Event {
			return with(succeededDoc(s), s.queue("d", domain.PhaseFull, 2, true))
		}, domain.StatusQueued, domain.PhaseFull, 2, ""},
		{"requeue preprocessed for extract", func(s *seq) []domain.Event {
			return with(preprocessedDoc(s), s.queue("d", domain.PhaseExtract, 2, false))
		}, domain.StatusQueued, domain.PhaseExtract, 2, ""},
		{"requeue preprocessed for preprocess with force", func(s *seq) []domain.Event {
			return with(preprocessedDoc(s), s.queue("d", domain.PhasePreprocess, 2, true))
		}, domain.StatusQueued, domain.PhasePreprocess, 2, ""},
		{"extract after preprocess succeeds", func(s *seq) []domain.Event {
			evs := with(preprocessedDoc(s), s.queue("d", domain.PhaseExtract, 2, false))
			evs = append(evs, s.claim("d", domain.PhaseExtract, 2, "c2"))
			return append(evs, s.succeeded("d", "c2"))
		}, domain.StatusSucceeded, domain.PhaseExtract, 2, "c2"},
		{"batch deleted cancels uploaded", func(s *seq) []domain.Event { return with(uploaded(s), s.deleteBatch("b")) }, domain.StatusCanceled, "", 0, ""},
		{"batch deleted cancels queued", func(s *seq) []domain.Event {
			return with(queued(s, domain.PhaseFull), s.deleteBatch("b"))
		}, domain.StatusCanceled, domain.PhaseFull, 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs := tc.events(newSeq())
			prefix, last := evs[:len(evs)-1], evs[len(evs)-1]
			before, snapshot := fold(t, prefix...), fold(t, prefix...)
			got, err := before.Apply(last)
			if err != nil {
				t.Fatalf("Apply(%s) = %v, want nil", last.Type(), err)
			}
			if got.Status != tc.status || got.Target != tc.target || got.Attempt != tc.attempt || got.ClaimID != tc.claim {
				t.Errorf("got status=%s target=%q attempt=%d claim=%q, want %s %q %d %q",
					got.Status, got.Target, got.Attempt, got.ClaimID, tc.status, tc.target, tc.attempt, tc.claim)
			}
			if !reflect.DeepEqual(before, snapshot) {
				t.Errorf("Apply mutated its receiver:\n got %+v\nwant %+v", before, snapshot)
			}
		})
	}
}

func TestDocumentIllegalTransitions(t *testing.T) {
	t.Parallel()
	full, pre := domain.PhaseFull, domain.PhasePreprocess
	cases := []struct {
		name   string
		events func(s *seq) []domain.Event // the last one is refused
		want   error
	}{
		{"upload twice", func(s *seq) []domain.Event { return with(uploaded(s), s.upload("d", "b")) }, domain.ErrDocumentExists},
		{"queue unknown document", func(s *seq) []domain.Event { return []domain.Event{s.queue("d", full, 1, false)} }, domain.ErrUnknownDocument},
		{"queue while queued", func(s *seq) []domain.Event { return with(queued(s, full), s.queue("d", full, 2, false)) }, domain.ErrAlreadyQueued},
		{"queue while preprocessing", func(s *seq) []domain.Event { return with(running(s, full), s.queue("d", full, 2, true)) }, domain.ErrAlreadyQueued},
		{"queue while extracting", func(s *seq) []domain.Event { return with(extracting(s), s.queue("d", full, 2, true)) }, domain.ErrAlreadyQueued},
		{"queue succeeded without force", func(s *seq) []domain.Event { return with(succeededDoc(s), s.queue("d", full, 2, false)) }, domain.ErrAlreadyDone},
		{"queue preprocessed for preprocess without force", func(s *seq) []domain.Event {
			return with(preprocessedDoc(s), s.queue("d", pre, 2, false))
		}, domain.ErrAlreadyDone},
		{"queue with stale attempt", func(s *seq) []domain.Event { return with(failedDoc(s), s.queue("d", full, 1, false)) }, domain.ErrStaleAttempt},
		{"queue skipping an attempt", func(s *seq) []domain.Event { return with(failedDoc(s), s.queue("d", full, 3, false)) }, domain.ErrStaleAttempt},
		{"queue after batch deleted", func(s *seq) []domain.Event {
			return with(with(uploaded(s), s.deleteBatch("b")), s.queue("d", full, 1, true))
		}, domain.ErrBatchDeleted},
		{"claim stale attempt", func(s *seq) []domain.Event {
			evs := with(failedDoc(s), s.queue("d", full, 2, false))
			return with(evs, s.claim("d", full, 1, "c9"))
		}, domain.ErrStaleAttempt},
		{"claim same claim id twice", func(s *seq) []domain.Event { return with(running(s, full), s.claim("d", full, 1, "c1")) }, domain.ErrDuplicateClaim},
		{"claim uploaded", func(s *seq) []domain.Event { return with(uploaded(s), s.claim("d", full, 0, "c1")) }, domain.ErrNotClaimable},
		{"claim succeeded", func(s *seq) []domain.Event { return with(succeededDoc(s), s.claim("d", full, 1, "c2")) }, domain.ErrNotClaimable},
		{"claim failed", func(s *seq) []domain.Event { return with(failedDoc(s), s.claim("d", full, 1, "c2")) }, domain.ErrNotClaimable},
		{"claim preprocessed", func(s *seq) []domain.Event { return with(preprocessedDoc(s), s.claim("d", pre, 1, "c2")) }, domain.ErrNotClaimable},
		{"claim canceled", func(s *seq) []domain.Event {
			return with(with(queued(s, full), s.cancel("d")), s.claim("d", full, 1, "c1"))
		}, domain.ErrNotClaimable},
		{"preprocessed from fenced claim", func(s *seq) []domain.Event {
			return with(with(running(s, full), s.claim("d", full, 1, "c2")), s.preprocessed("d", "c1"))
		}, domain.ErrFencedClaim},
		{"succeeded from fenced claim", func(s *seq) []domain.Event {
			return with(with(extracting(s), s.claim("d", domain.PhaseExtract, 1, "c2")), s.succeeded("d", "c1"))
		}, domain.ErrFencedClaim},
		{"failed from fenced claim", func(s *seq) []domain.Event {
			return with(with(running(s, full), s.claim("d", full, 1, "c2")), s.failed("d", "c1", pre))
		}, domain.ErrFencedClaim},
		{"result on queued document", func(s *seq) []domain.Event { return with(queued(s, full), s.succeeded("d", "c1")) }, domain.ErrFencedClaim},
		{"result after terminal", func(s *seq) []domain.Event { return with(succeededDoc(s), s.succeeded("d", "c1")) }, domain.ErrFencedClaim},
		{"failed after succeeded", func(s *seq) []domain.Event { return with(succeededDoc(s), s.failed("d", "c1", full)) }, domain.ErrFencedClaim},
		{"succeeded while preprocessing", func(s *seq) []domain.Event { return with(running(s, full), s.succeeded("d", "c1")) }, domain.ErrWrongPhase},
		{"preprocessed while extracting", func(s *seq) []domain.Event { return with(extracting(s), s.preprocessed("d", "c1")) }, domain.ErrWrongPhase},
		// Another writer's success with numbers JSON cannot carry.
		{"succeeded with a NaN quantity", func(s *seq) []domain.Event {
			return with(extracting(s), s.succeeded("d", "c1", domain.LineItem{Description: "x", Quantity: math.NaN(), Amount: 1}))
		}, domain.ErrInvalidResult},
		{"succeeded with an infinite unit price", func(s *seq) []domain.Event {
			return with(extracting(s), s.succeeded("d", "c1", domain.LineItem{Description: "ok", Amount: 1}, domain.LineItem{Description: "x", UnitPrice: math.Inf(1), Amount: 1}))
		}, domain.ErrInvalidResult},
		{"succeeded with a negative infinite amount", func(s *seq) []domain.Event {
			return with(extracting(s), s.succeeded("d", "c1", domain.LineItem{Description: "x", Amount: math.Inf(-1)}))
		}, domain.ErrInvalidResult},
		{"cancel after start", func(s *seq) []domain.Event { return with(running(s, full), s.cancel("d")) }, domain.ErrAlreadyStarted},
		{"cancel after success", func(s *seq) []domain.Event { return with(succeededDoc(s), s.cancel("d")) }, domain.ErrAlreadyStarted},
		{"cancel twice", func(s *seq) []domain.Event { return with(canceledDoc(s), s.cancel("d")) }, domain.ErrDocumentCanceled},
		{"cancel unknown document", func(s *seq) []domain.Event { return []domain.Event{s.cancel("d")} }, domain.ErrUnknownDocument},
		{"delete of another batch", func(s *seq) []domain.Event { return with(uploaded(s), s.deleteBatch("other")) }, domain.ErrUnknownDocument},
		{"delete twice", func(s *seq) []domain.Event {
			return with(with(running(s, full), s.deleteBatch("b")), s.deleteBatch("b"))
		}, domain.ErrUnknownDocument},
		{"event of another aggregate", func(s *seq) []domain.Event {
			return with(uploaded(s), &domain.OrgCreated{Meta: s.meta(), Name: "acme"})
		}, domain.ErrUnknownDocument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs := tc.events(newSeq())
			prefix, last := evs[:len(evs)-1], evs[len(evs)-1]
			before := fold(t, prefix...)
			got, err := before.Apply(last)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Apply(%s) error = %v, want %v", last.Type(), err, tc.want)
			}
			if !domain.IsNoop(err) {
				t.Errorf("IsNoop(%v) = false, want true", err)
			}
			if !reflect.DeepEqual(got, before) {
				t.Errorf("refused event changed state:\n got %+v\nwant %+v", got, before)
			}
		})
	}
}

func TestDocumentDeleteRacesStart(t *testing.T) {
	t.Parallel()
	t.Run("delete first", func(t *testing.T) {
		t.Parallel()
		s := newSeq()
		d := fold(t, with(queued(s, domain.PhaseFull), s.deleteBatch("b"))...)
		if d.Status != domain.StatusCanceled || !d.BatchDeleted || d.CompletedAt.IsZero() {
			t.Fatalf("after delete: status=%s deleted=%v completed=%v", d.Status, d.BatchDeleted, d.CompletedAt)
		}
		got, err := d.Apply(s.claim("d", domain.PhaseFull, 1, "c1"))
		if !errors.Is(err, domain.ErrNotClaimable) || !domain.IsNoop(err) {
			t.Fatalf("late start: err = %v, want no-op ErrNotClaimable", err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Errorf("late start changed state: %+v", got)
		}
	})
	t.Run("start first", func(t *testing.T) {
		t.Parallel()
		s := newSeq()
		d := fold(t, with(running(s, domain.PhaseFull), s.deleteBatch("b"))...)
		if d.Status != domain.StatusPreprocessing || !d.BatchDeleted || !d.CompletedAt.IsZero() {
			t.Fatalf("after delete: status=%s deleted=%v completed=%v", d.Status, d.BatchDeleted, d.CompletedAt)
		}
		d, err := d.Apply(s.preprocessed("d", "c1"))
		if err != nil {
			t.Fatalf("preprocessed after delete: %v", err)
		}
		got, err := d.Apply(s.succeeded("d", "c1"))
		if err != nil || got.Status != domain.StatusSucceeded || !got.BatchDeleted {
			t.Fatalf("result after delete: status=%s deleted=%v err=%v", got.Status, got.BatchDeleted, err)
		}
	})
}

func TestDocumentTimestamps(t *testing.T) {
	t.Parallel()
	s := newSeq()
	var d domain.Document
	step := func(e domain.Event) time.Time {
		t.Helper()
		n, err := d.Apply(e)
		if err != nil {
			t.Fatalf("%s: %v", e.Type(), err)
		}
		d = n
		return e.Header().OccurredAt
	}
	check := func(label string, created, started, completed time.Time) {
		t.Helper()
		if !d.CreatedAt.Equal(created) || !d.StartedAt.Equal(started) || !d.CompletedAt.Equal(completed) {
			t.Errorf("%s: created=%v started=%v completed=%v, want %v %v %v",
				label, d.CreatedAt, d.StartedAt, d.CompletedAt, created, started, completed)
		}
	}
	var zero time.Time
	up := step(s.upload("d", "b"))
	check("uploaded", up, zero, zero)
	step(s.queue("d", domain.PhaseFull, 1, false))
	check("queued", up, zero, zero)
	st := step(s.claim("d", domain.PhaseFull, 1, "c1"))
	check("claimed", up, st, zero)
	step(s.claim("d", domain.PhaseFull, 1, "c2"))
	check("superseded", up, st, zero)
	step(s.preprocessed("d", "c2"))
	check("extracting", up, st, zero)
	done := step(s.failed("d", "c2", domain.PhaseExtract))
	check("failed", up, st, done)
	step(s.queue("d", domain.PhaseFull, 2, false))
	check("requeued", up, zero, zero)
	st = step(s.claim("d", domain.PhaseFull, 2, "c3"))
	step(s.preprocessed("d", "c3"))
	done = step(s.succeeded("d", "c3"))
	check("succeeded", up, st, done)
	step(s.queue("d", domain.PhasePreprocess, 3, true))
	check("forced requeue", up, zero, zero)
	st = step(s.claim("d", domain.PhasePreprocess, 3, "c4"))
	done = step(s.preprocessed("d", "c4"))
	check("preprocessed", up, st, done)
	step(s.queue("d", domain.PhaseExtract, 4, false))
	check("queued for extract", up, zero, zero)
	done = step(s.cancel("d"))
	check("canceled", up, zero, done)
}

func TestDocumentApplyDoesNotAlias(t *testing.T) {
	t.Parallel()
	s := newSeq()
	jobs := make([]string, 1, 8) // spare capacity would expose an in-place append
	jobs[0] = "job-1"
	items := make([]domain.LineItem, 1, 8)
	items[0] = domain.LineItem{Description: "first", Amount: 1}
	q := s.queue("d", domain.PhaseExtract, 1, false)
	q.JobIDs = jobs
	done := fold(t, s.upload("d", "b"), q, s.claim("d", domain.PhaseExtract, 1, "c1"), s.succeeded("d", "c1", items...))

	jobs[0], items[0].Description = "mutated", "mutated"
	if done.JobIDs[0] != "job-1" || done.LineItems[0].Description != "first" {
		t.Fatalf("state aliases event slices: jobs=%v items=%v", done.JobIDs, done.LineItems)
	}

	requeued, err := done.Apply(s.queue("d", domain.PhaseExtract, 2, true, "job-2", "job-3"))
	if err != nil {
		t.Fatal(err)
	}
	requeued, _ = requeued.Apply(s.claim("d", domain.PhaseExtract, 2, "c2"))
	again, err := requeued.Apply(s.succeeded("d", "c2", domain.LineItem{Description: "second"}, domain.LineItem{Description: "third"}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(done.JobIDs, []string{"job-1"}) || len(done.LineItems) != 1 || done.LineItems[0].Description != "first" {
		t.Errorf("receiver mutated: jobs=%v items=%v", done.JobIDs, done.LineItems)
	}
	if len(again.LineItems) != 2 || !reflect.DeepEqual(again.JobIDs, []string{"job-2", "job-3"}) {
		t.Errorf("new state: jobs=%v items=%v", again.JobIDs, again.LineItems)
	}
}
