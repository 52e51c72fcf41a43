package domain_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/docket/docket/domain"
)

// TestDocumentJoin covers a DocumentQueued that names the current attempt: a
// job asking for what the run in flight already does joins it.
func TestDocumentJoin(t *testing.T) {
	t.Parallel()
	pre, ext, full := domain.PhasePreprocess, domain.PhaseExtract, domain.PhaseFull
	q := func(phase string) func(s *seq) []domain.Event {
		return func(s *seq) []domain.Event { return queued(s, phase) }
	}
	r := func(phase string) func(s *seq) []domain.Event {
		return func(s *seq) []domain.Event { return running(s, phase) }
	}
	failedExtract := func(s *seq) []domain.Event { return with(extracting(s), s.failed("d", "c1", ext)) }
	canceled := func(s *seq) []domain.Event { return with(queued(s, full), s.cancel("d")) }
	cases := []struct {
		name   string
		prefix func(s *seq) []domain.Event // run attempt 1 for job-1
		phase  string
		jobs   []string
		want   error // nil: joined
	}{
		{"queued full, asked preprocess", q(full), pre, []string{"job-2"}, nil},
		{"queued full, asked extract", q(full), ext, []string{"job-2"}, nil},
		{"queued full, asked full", q(full), full, []string{"job-2", "job-3"}, nil},
		{"queued preprocess, asked preprocess", q(pre), pre, []string{"job-2"}, nil},
		{"queued extract, asked extract", q(ext), ext, []string{"job-2"}, nil},
		{"preprocessing full, asked extract", r(full), ext, []string{"job-2"}, nil},
		{"preprocessing preprocess, asked preprocess", r(pre), pre, []string{"job-2"}, nil},
		{"extracting full, asked preprocess", extracting, pre, []string{"job-2"}, nil},
		{"extracting extract, asked extract", r(ext), ext, []string{"job-2"}, nil},
		{"job already in the run", r(full), pre, []string{"job-1", "job-2"}, nil},
		{"preprocessing preprocess, asked extract", r(pre), ext, []string{"job-2"}, domain.ErrAlreadyQueued},
		{"preprocessing preprocess, asked full", r(pre), full, []string{"job-2"}, domain.ErrAlreadyQueued},
		{"queued preprocess, asked extract", q(pre), ext, []string{"job-2"}, domain.ErrAlreadyQueued},
		{"queued extract, asked preprocess", q(ext), pre, []string{"job-2"}, domain.ErrAlreadyQueued},
		{"no job to add", q(full), full, nil, domain.ErrAlreadyQueued},
		{"succeeded", succeededDoc, pre, []string{"job-2"}, domain.ErrAlreadyDone},
		{"preprocessed", preprocessedDoc, pre, []string{"job-2"}, domain.ErrAlreadyDone},
		{"failed in preprocess", failedDoc, full, []string{"job-2"}, domain.ErrStaleAttempt},
		{"failed in extract", failedExtract, ext, []string{"job-2"}, domain.ErrStaleAttempt},
		{"canceled", canceled, full, []string{"job-2"}, domain.ErrStaleAttempt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSeq()
			before := fold(t, tc.prefix(s)...)
			snap := fold(t, tc.prefix(newSeq())...)
			before.JobIDs = slices.Grow(before.JobIDs, 8) // spare capacity would expose an in-place append
			snap.JobIDs = slices.Grow(snap.JobIDs, 8)
			got, err := before.Apply(s.queue("d", tc.phase, before.Attempt, false, tc.jobs...))
			if !reflect.DeepEqual(before, snap) {
				t.Errorf("Apply mutated its receiver:\n got %+v\nwant %+v", before, snap)
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !domain.IsNoop(err) {
					t.Fatalf("Apply = %v, want no-op %v", err, tc.want)
				}
				if !reflect.DeepEqual(got, before) {
					t.Errorf("refused join changed state:\n got %+v\nwant %+v", got, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("join refused: %v", err)
			}
			wantJobs := []string{"job-1"}
			for _, j := range tc.jobs {
				if !slices.Contains(wantJobs, j) {
					wantJobs = append(wantJobs, j)
				}
			}
			if !slices.Equal(got.JobIDs, wantJobs) {
				t.Errorf("JobIDs = %v, want %v", got.JobIDs, wantJobs)
			}
			// The run itself is untouched: same attempt, target, claim and times.
			got.JobIDs = before.JobIDs
			if !reflect.DeepEqual(got, before) {
				t.Errorf("join started a new run:\n got %+v\nwant %+v", got, before)
			}
		})
	}
}

// TestJoinedJobTracksRun checks that a job joining a run in flight follows it
// to the end without a run of its own.
func TestJoinedJobTracksRun(t *testing.T) {
	t.Parallel()
	s := newSeq()
	j := domain.NewJob(s.created(domain.JobPreprocess, "d"))
	d := fold(t, running(s, domain.PhaseFull)...) // serves job-1 only
	j = j.Track(d, s.meta().OccurredAt)
	if !j.StartedAt.IsZero() {
		t.Fatalf("job moved by a run that does not serve it: %+v", j)
	}
	steps := []domain.Event{s.queue("d", domain.PhasePreprocess, 1, false, "J"), s.preprocessed("d", "c1")}
	for _, e := range steps {
		n, err := d.Apply(e)
		if err != nil {
			t.Fatalf("%s: %v", e.Type(), err)
		}
		d, j = n, j.Track(n, e.Header().OccurredAt)
	}
	if d.Attempt != 1 || d.Status != domain.StatusExtracting {
		t.Fatalf("document: attempt=%d status=%s", d.Attempt, d.Status)
	}
	if st, _, ok := j.Outcome(); !ok || st != domain.JobStatusCompleted || !j.Rows[0].StartedAt.Equal(d.StartedAt) {
		t.Errorf("joined job: outcome=%s ok=%v row=%+v", st, ok, j.Rows[0])
	}
}
