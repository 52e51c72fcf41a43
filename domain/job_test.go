package domain_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/docket/docket/domain"
)

func (s *seq) created(kind string, docs ...string) *domain.JobCreated {
	return &domain.JobCreated{Meta: s.meta(), JobID: "J", Kind: kind, DocumentIDs: docs}
}
func (s *seq) cancelJob() *domain.JobCancelRequested {
	return &domain.JobCancelRequested{Meta: s.meta(), JobID: "J"}
}
func (s *seq) reopen(gen int, docs ...string) *domain.JobReopened {
	return &domain.JobReopened{Meta: s.meta(), JobID: "J", Generation: gen, DocumentIDs: docs}
}
func (s *seq) complete(gen int, st domain.JobStatus) *domain.JobCompleted {
	return &domain.JobCompleted{Meta: s.meta(), JobID: "J", Generation: gen, Status: string(st)}
}
func (s *seq) cancelled(gen int) *domain.JobCancelled {
	return &domain.JobCancelled{Meta: s.meta(), JobID: "J", Generation: gen}
}

// jobFold keeps job "J" and its documents the way the job projection does:
// every document event is folded, then tracked into the job at its time.
type jobFold struct {
	t    *testing.T
	s    *seq
	job  domain.Job
	docs map[string]domain.Document
}

func newJobFold(t *testing.T, s *seq, kind string, docs ...string) *jobFold {
	t.Helper()
	f := &jobFold{t: t, s: s, docs: map[string]domain.Document{}}
	for _, id := range docs {
		f.doc(f.s.upload(id, "b"))
	}
	f.apply(f.s.created(kind, docs...))
	return f
}

func (f *jobFold) doc(e domain.Event) {
	f.t.Helper()
	id := domain.DocumentIDOf(e)
	d, err := f.docs[id].Apply(e)
	if err != nil {
		f.t.Fatalf("%s on %s: %v", e.Type(), id, err)
	}
	f.docs[id] = d
	f.job = f.job.Track(d, e.Header().OccurredAt)
}

func (f *jobFold) apply(e domain.Event) {
	f.t.Helper()
	j, err := f.job.Apply(e)
	if err != nil {
		f.t.Fatalf("job %s: %v", e.Type(), err)
	}
	f.job = j
}

// finish runs a new attempt of doc id for jobs (default: J) to an outcome:
// "completed" (preprocessed, or succeeded for an extraction job), "failed"
// (in the preprocess phase) or "cancelled" (before start).
func (f *jobFold) finish(id, outcome string, jobs ...string) {
	f.t.Helper()
	if len(jobs) == 0 {
		jobs = []string{f.job.ID}
	}
	phase, att, claim := domain.PhasePreprocess, f.docs[id].Attempt+1, id+"-c"+string(rune('0'+f.docs[id].Attempt+1))
	if f.job.Kind == domain.JobExtraction {
		phase = domain.PhaseFull
	}
	f.doc(f.s.queue(id, phase, att, true, jobs...))
	if outcome == "cancelled" {
		f.doc(f.s.cancel(id))
		return
	}
	f.doc(f.s.claim(id, phase, att, claim))
	if outcome == "failed" {
		f.doc(f.s.failed(id, claim, domain.PhasePreprocess))
		return
	}
	f.doc(f.s.preprocessed(id, claim))
	if phase == domain.PhaseFull {
		f.doc(f.s.succeeded(id, claim))
	}
}

func rowStatuses(j domain.Job) []domain.RowStatus {
	var out []domain.RowStatus
	for _, r := range j.Rows {
		out = append(out, r.Status)
	}
	return out
}

func TestRowVocabularies(t *testing.T) {
	t.Parallel()
	full := domain.PhaseFull
	cases := []struct {
		name   string
		events func(s *seq) []domain.Event
		pre    domain.RowStatus
		ext    domain.RowStatus
		docJob domain.JobStatus
	}{
		{"uploaded", uploaded, domain.RowInProgress, domain.RowQueued, domain.JobStatusQueued},
		{"queued", func(s *seq) []domain.Event { return queued(s, full) }, domain.RowInProgress, domain.RowQueued, domain.JobStatusQueued},
		{"preprocessing", func(s *seq) []domain.Event { return running(s, full) }, domain.RowInProgress, domain.RowQueued, domain.JobStatusInProgress},
		{"preprocessed", preprocessedDoc, domain.RowCompleted, domain.RowQueued, domain.JobStatusCompleted},
		{"extracting", extracting, domain.RowCompleted, domain.RowInProgress, domain.JobStatusCompleted},
		{"succeeded", succeededDoc, domain.RowCompleted, domain.RowCompleted, domain.JobStatusCompleted},
		{"failed in preprocess", failedDoc, domain.RowFailed, domain.RowFailed, domain.JobStatusFailed},
		{"failed in extract", func(s *seq) []domain.Event {
			return with(extracting(s), s.failed("d", "c1", domain.PhaseExtract))
		}, domain.RowCompleted, domain.RowFailed, domain.JobStatusCompleted},
		{"canceled", func(s *seq) []domain.Event { return with(queued(s, full), s.cancel("d")) }, domain.RowCancelled, domain.RowCancelled, domain.JobStatusCancelled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSeq()
			d := fold(t, tc.events(s)...)
			if got := domain.PreprocessRow(d); got != tc.pre || got == domain.RowQueued {
				t.Errorf("PreprocessRow(%s) = %s, want %s", d.Status, got, tc.pre)
			}
			if got := domain.ExtractionRow(d); got != tc.ext {
				t.Errorf("ExtractionRow(%s) = %s, want %s", d.Status, got, tc.ext)
			}
			if got := domain.DocumentJob(d); got != tc.docJob {
				t.Errorf("DocumentJob(%s) = %s, want %s", d.Status, got, tc.docJob)
			}
			// Track uses the same vocabularies; only preprocess rows carry an error.
			for kind, want := range map[string]domain.RowStatus{domain.JobPreprocess: tc.pre, domain.JobExtraction: tc.ext} {
				j := domain.NewJob(&domain.JobCreated{Meta: s.meta(), JobID: "job-1", Kind: kind, DocumentIDs: []string{"d"}})
				r := j.Track(d, s.meta().OccurredAt).Rows[0]
				if r.Status != want || (r.Error != nil) != (kind == domain.JobPreprocess && want == domain.RowFailed) {
					t.Errorf("%s: tracked row = %s (error %+v), want %s", kind, r.Status, r.Error, want)
				}
			}
		})
	}
}

func TestNewJob(t *testing.T) {
	t.Parallel()
	s := newSeq()
	e := s.created(domain.JobPreprocess, "d1", "d2", "d1")
	p := domain.NewJob(e)
	if !reflect.DeepEqual(rowStatuses(p), []domain.RowStatus{domain.RowInProgress, domain.RowInProgress}) ||
		p.Rows[0].DocumentID != "d1" || p.Rows[1].DocumentID != "d2" {
		t.Errorf("preprocess rows = %+v", p.Rows)
	}
	if p.Status() != domain.JobStatusQueued || !p.CreatedAt.Equal(e.Meta.OccurredAt) || p.OrgID != "org_acme" || p.Progress() != (domain.Progress{Total: 2}) {
		t.Errorf("new job: status=%s created=%v org=%q progress=%+v", p.Status(), p.CreatedAt, p.OrgID, p.Progress())
	}
	sess := "sess-1"
	x := domain.NewJob(&domain.JobCreated{Meta: s.meta(), JobID: "J", Kind: domain.JobExtraction, SessionID: &sess, DocumentIDs: []string{"d1", "d1"}})
	if !reflect.DeepEqual(rowStatuses(x), []domain.RowStatus{domain.RowQueued}) || x.SessionID != sess {
		t.Errorf("extraction job: rows=%+v session=%q", x.Rows, x.SessionID)
	}
}

func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	ip, q, done, fail := domain.RowInProgress, domain.RowQueued, domain.RowCompleted, domain.RowFailed
	type step struct {
		ev     func(s *seq) domain.Event
		status domain.JobStatus
		rows   []domain.RowStatus
	}
	cases := []struct {
		name  string
		kind  string
		steps []step
	}{
		{"preprocess", domain.JobPreprocess, []step{
			{func(s *seq) domain.Event { return s.queue("d1", domain.PhasePreprocess, 1, false, "J") }, domain.JobStatusQueued, []domain.RowStatus{ip, ip}},
			{func(s *seq) domain.Event { return s.queue("d2", domain.PhasePreprocess, 1, false, "other") }, domain.JobStatusQueued, []domain.RowStatus{ip, ip}},
			{func(s *seq) domain.Event { return s.claim("d2", domain.PhasePreprocess, 1, "x") }, domain.JobStatusQueued, []domain.RowStatus{ip, ip}},
			{func(s *seq) domain.Event { return s.preprocessed("d2", "x") }, domain.JobStatusQueued, []domain.RowStatus{ip, ip}},
			{func(s *seq) domain.Event { return s.claim("d1", domain.PhasePreprocess, 1, "c1") }, domain.JobStatusInProgress, []domain.RowStatus{ip, ip}},
			{func(s *seq) domain.Event { return s.preprocessed("d1", "c1") }, domain.JobStatusInProgress, []domain.RowStatus{done, ip}},
			{func(s *seq) domain.Event { return s.queue("d2", domain.PhasePreprocess, 2, true, "J") }, domain.JobStatusInProgress, []domain.RowStatus{done, ip}},
			{func(s *seq) domain.Event { return s.claim("d2", domain.PhasePreprocess, 2, "c2") }, domain.JobStatusInProgress, []domain.RowStatus{done, ip}},
			{func(s *seq) domain.Event { return s.failed("d2", "c2", domain.PhasePreprocess) }, domain.JobStatusInProgress, []domain.RowStatus{done, fail}},
			{func(s *seq) domain.Event { return s.complete(0, domain.JobStatusCompletedWithFailures) }, domain.JobStatusCompletedWithFailures, []domain.RowStatus{done, fail}},
		}},
		{"extraction", domain.JobExtraction, []step{
			{func(s *seq) domain.Event { return s.queue("d1", domain.PhaseFull, 1, false, "J") }, domain.JobStatusQueued, []domain.RowStatus{q, q}},
			// the document started (preprocessing): the job is under way, the row still waits for extraction
			{func(s *seq) domain.Event { return s.claim("d1", domain.PhaseFull, 1, "c1") }, domain.JobStatusInProgress, []domain.RowStatus{q, q}},
			{func(s *seq) domain.Event { return s.preprocessed("d1", "c1") }, domain.JobStatusInProgress, []domain.RowStatus{ip, q}},
			{func(s *seq) domain.Event { return s.failed("d1", "c1", domain.PhaseExtract) }, domain.JobStatusInProgress, []domain.RowStatus{fail, q}},
			{func(s *seq) domain.Event { return s.queue("d2", domain.PhaseExtract, 1, false, "J") }, domain.JobStatusInProgress, []domain.RowStatus{fail, q}},
			{func(s *seq) domain.Event { return s.claim("d2", domain.PhaseExtract, 1, "c2") }, domain.JobStatusInProgress, []domain.RowStatus{fail, ip}},
			{func(s *seq) domain.Event { return s.succeeded("d2", "c2") }, domain.JobStatusInProgress, []domain.RowStatus{fail, done}},
			{func(s *seq) domain.Event { return s.complete(0, domain.JobStatusCompletedWithFailures) }, domain.JobStatusCompletedWithFailures, []domain.RowStatus{fail, done}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobFold(t, newSeq(), tc.kind, "d1", "d2")
			for i, st := range tc.steps {
				e := st.ev(f.s)
				if domain.JobIDOf(e) != "" {
					f.apply(e)
				} else {
					f.doc(e)
				}
				if f.job.Status() != st.status || !reflect.DeepEqual(rowStatuses(f.job), st.rows) {
					t.Fatalf("step %d (%s): status=%s rows=%v, want %s %v", i, e.Type(), f.job.Status(), rowStatuses(f.job), st.status, st.rows)
				}
				if tc.kind == domain.JobExtraction && slices.ContainsFunc(f.job.Rows, func(r domain.Row) bool { return r.Error != nil }) {
					t.Fatalf("step %d: extraction row carries an error: %+v", i, f.job.Rows)
				}
			}
		})
	}
}

func TestJobTerminalRowStaysFrozen(t *testing.T) {
	t.Parallel()
	f := newJobFold(t, newSeq(), domain.JobPreprocess, "d1")
	f.finish("d1", "completed")
	frozen := f.job
	f.finish("d1", "failed", "other") // another job's forced run
	f.finish("d1", "failed", "J")     // even a run naming J, until J is reopened
	if !reflect.DeepEqual(f.job, frozen) {
		t.Errorf("terminal row moved:\n got %+v\nwant %+v", f.job.Rows, frozen.Rows)
	}
}

func TestJobAdopt(t *testing.T) {
	t.Parallel()
	pre, ext := domain.JobPreprocess, domain.JobExtraction
	failedExtract := func(s *seq) []domain.Event { return with(extracting(s), s.failed("d", "c1", domain.PhaseExtract)) }
	canceled := func(s *seq) []domain.Event { return with(queued(s, domain.PhaseFull), s.cancel("d")) }
	cases := []struct {
		name   string
		kind   string
		events func(s *seq) []domain.Event
		force  bool
		job    string // the doc's run serves job-1
		want   domain.RowStatus
	}{
		{"preprocess: preprocessed", pre, preprocessedDoc, false, "J", domain.RowCompleted},
		{"preprocess: succeeded", pre, succeededDoc, false, "J", domain.RowCompleted},
		{"preprocess: extracting", pre, extracting, false, "J", domain.RowCompleted},
		{"preprocess: failed in extract", pre, failedExtract, false, "J", domain.RowCompleted},
		{"preprocess: preprocessed, force", pre, preprocessedDoc, true, "J", domain.RowInProgress},
		{"preprocess: succeeded, force", pre, succeededDoc, true, "J", domain.RowInProgress},
		{"preprocess: uploaded", pre, uploaded, false, "J", domain.RowInProgress},
		{"preprocess: failed in preprocess", pre, failedDoc, false, "J", domain.RowInProgress},
		{"preprocess: canceled", pre, canceled, false, "J", domain.RowInProgress},
		{"preprocess: run already serves the job", pre, preprocessedDoc, false, "job-1", domain.RowInProgress},
		{"extraction: succeeded", ext, succeededDoc, false, "J", domain.RowCompleted},
		{"extraction: succeeded, force", ext, succeededDoc, true, "J", domain.RowQueued},
		{"extraction: preprocessed", ext, preprocessedDoc, false, "J", domain.RowQueued},
		{"extraction: extracting", ext, extracting, false, "J", domain.RowQueued},
		{"extraction: failed", ext, failedDoc, false, "J", domain.RowQueued},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSeq()
			d := fold(t, tc.events(s)...)
			e := s.created(tc.kind, "d", "other")
			e.JobID = tc.job
			j, snap := domain.NewJob(e), domain.NewJob(e)
			at := s.meta().OccurredAt
			got := j.Adopt(d, tc.force, at)
			r := got.Rows[0]
			if r.Status != tc.want || got.Rows[1] != j.Rows[1] {
				t.Fatalf("Adopt: rows = %+v, want %s for d", got.Rows, tc.want)
			}
			adopted := tc.want == domain.RowCompleted
			if adopted != (r.StartedAt.Equal(at) && r.CompletedAt.Equal(at) && got.StartedAt.Equal(at)) {
				t.Errorf("Adopt times: row %v..%v job started %v, adopted=%v", r.StartedAt, r.CompletedAt, got.StartedAt, adopted)
			}
			if !reflect.DeepEqual(j, snap) {
				t.Errorf("Adopt mutated its receiver: %+v", j.Rows)
			}
		})
	}
}

func TestJobOutcome(t *testing.T) {
	t.Parallel()
	C, CWF, F, X := domain.JobStatusCompleted, domain.JobStatusCompletedWithFailures, domain.JobStatusFailed, domain.JobStatusCancelled
	cases := []struct {
		name     string
		outcomes []string
		cancel   bool
		want     domain.JobStatus
		progress domain.Progress
	}{
		{"all completed", []string{"completed", "completed"}, false, C, domain.Progress{Done: 2, Total: 2}},
		{"some failed", []string{"completed", "failed"}, false, CWF, domain.Progress{Done: 2, Total: 2, Failed: 1}},
		{"some cancelled without request", []string{"completed", "cancelled"}, false, CWF, domain.Progress{Done: 2, Total: 2}},
		{"all cancelled without request", []string{"cancelled", "cancelled"}, false, CWF, domain.Progress{Done: 2, Total: 2}},
		{"failed and cancelled without request", []string{"failed", "cancelled"}, false, CWF, domain.Progress{Done: 2, Total: 2, Failed: 1}},
		{"all failed", []string{"failed", "failed"}, false, F, domain.Progress{Done: 2, Total: 2, Failed: 2}},
		{"cancel requested, all completed", []string{"completed", "completed"}, true, X, domain.Progress{Done: 2, Total: 2}},
		{"cancel requested, mixed", []string{"failed", "cancelled"}, true, X, domain.Progress{Done: 2, Total: 2, Failed: 1}},
	}
	for _, kind := range []string{domain.JobPreprocess, domain.JobExtraction} {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newJobFold(t, newSeq(), kind, "d1", "d2")
				if tc.cancel {
					f.apply(f.s.cancelJob())
				}
				f.finish("d1", tc.outcomes[0])
				if _, p, ok := f.job.Outcome(); ok || p.Done != 1 {
					t.Fatalf("Outcome with a row open: ok=%v progress=%+v", ok, p)
				}
				f.finish("d2", tc.outcomes[1])
				got, p, ok := f.job.Outcome()
				if !ok || got != tc.want || p != tc.progress || f.job.Progress() != tc.progress {
					t.Fatalf("Outcome = %s %+v %v, want %s %+v", got, p, ok, tc.want, tc.progress)
				}
				if f.job.Status().Terminal() {
					t.Fatalf("status %s before the outcome is recorded", f.job.Status())
				}
				if tc.want == X {
					f.apply(f.s.cancelled(0))
				} else {
					f.apply(f.s.complete(0, tc.want))
				}
				if f.job.Status() != tc.want || f.job.Final != tc.want {
					t.Errorf("recorded status = %s, want %s", f.job.Status(), tc.want)
				}
				if _, _, ok := f.job.Outcome(); ok {
					t.Error("Outcome still ok once Final is set")
				}
			})
		}
	}
}

// refused applies e to the job and checks it is a recorded no-op.
func refused(t *testing.T, build func(s *seq) (domain.Job, domain.Event), want error) {
	t.Helper()
	j, e := build(newSeq())
	snap, _ := build(newSeq())
	got, err := j.Apply(e)
	if !errors.Is(err, want) || !domain.IsNoop(err) {
		t.Fatalf("Apply(%s) = %v, want no-op %v", e.Type(), err, want)
	}
	if !reflect.DeepEqual(got, snap) || !reflect.DeepEqual(j, snap) {
		t.Errorf("refused %s changed state:\n got %+v\nwant %+v", e.Type(), got, snap)
	}
}

func TestJobApplyRefused(t *testing.T) {
	t.Parallel()
	pre, ext := domain.JobPreprocess, domain.JobExtraction
	// state builds job J over d1, d2 with the given outcomes ("" leaves a row
	// open), then the job events of more (applied in order, all legal).
	state := func(kind string, outcomes []string, more ...func(s *seq) domain.Event) func(t *testing.T, s *seq) *jobFold {
		return func(t *testing.T, s *seq) *jobFold {
			f := newJobFold(t, s, kind, "d1", "d2")
			for i, o := range outcomes {
				if o != "" {
					f.finish([]string{"d1", "d2"}[i], o)
				}
			}
			for _, m := range more {
				f.apply(m(f.s))
			}
			return f
		}
	}
	ok2 := []string{"completed", "completed"}
	cancelReq := func(s *seq) domain.Event { return s.cancelJob() }
	completed := func(s *seq) domain.Event { return s.complete(0, domain.JobStatusCompleted) }
	cases := []struct {
		name  string
		state func(t *testing.T, s *seq) *jobFold
		ev    func(s *seq) domain.Event
		want  error
	}{
		{"created twice", state(pre, nil), func(s *seq) domain.Event { return s.created(pre, "d3") }, domain.ErrJobExists},
		{"cancel request on completed job", state(pre, ok2, completed), cancelReq, domain.ErrJobTerminal},
		{"cancel request twice", state(ext, nil, cancelReq), cancelReq, domain.ErrJobTerminal},
		{"cancel request on cancelled job", state(ext, ok2, cancelReq, func(s *seq) domain.Event { return s.cancelled(0) }), cancelReq, domain.ErrJobTerminal},
		{"completed, wrong generation", state(pre, ok2), func(s *seq) domain.Event { return s.complete(1, domain.JobStatusCompleted) }, domain.ErrJobNotDone},
		{"completed, wrong status", state(pre, []string{"completed", "failed"}), completed, domain.ErrJobNotDone},
		{"completed, rows open", state(ext, []string{"completed", ""}), completed, domain.ErrJobNotDone},
		{"completed twice", state(pre, ok2, completed), completed, domain.ErrJobNotDone},
		{"completed although cancel requested", state(pre, ok2, cancelReq), completed, domain.ErrJobNotDone},
		{"cancelled without request", state(pre, ok2), func(s *seq) domain.Event { return s.cancelled(0) }, domain.ErrJobNotDone},
		{"cancelled, rows open", state(pre, []string{"cancelled", ""}, cancelReq), func(s *seq) domain.Event { return s.cancelled(0) }, domain.ErrJobNotDone},
		{"reopen extraction job", state(ext, ok2, completed), func(s *seq) domain.Event { return s.reopen(1, "d1") }, domain.ErrJobNotReopenable},
		{"reopen open job", state(pre, []string{"completed", ""}), func(s *seq) domain.Event { return s.reopen(1, "d1") }, domain.ErrJobNotReopenable},
		{"reopen same generation", state(pre, ok2, completed), func(s *seq) domain.Event { return s.reopen(0, "d1") }, domain.ErrJobNotReopenable},
		{"reopen skipping a generation", state(pre, ok2, completed), func(s *seq) domain.Event { return s.reopen(2, "d1") }, domain.ErrJobNotReopenable},
		{"reopen unknown job", func(_ *testing.T, s *seq) *jobFold { return &jobFold{s: s} }, func(s *seq) domain.Event { return s.reopen(1, "d1") }, domain.ErrUnknownJob},
		{"cancel request unknown job", func(_ *testing.T, s *seq) *jobFold { return &jobFold{s: s} }, cancelReq, domain.ErrUnknownJob},
		{"document event", state(pre, nil), func(s *seq) domain.Event { return s.upload("d9", "") }, domain.ErrUnknownJob},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			refused(t, func(s *seq) (domain.Job, domain.Event) {
				f := tc.state(t, s)
				return f.job, tc.ev(f.s)
			}, tc.want)
		})
	}
}

func TestJobReopen(t *testing.T) {
	t.Parallel()
	f := newJobFold(t, newSeq(), domain.JobPreprocess, "d1", "d2")
	f.finish("d1", "failed")
	f.finish("d2", "completed")
	f.apply(f.s.complete(0, domain.JobStatusCompletedWithFailures))
	before, snap := f.job, f.job
	before.Rows = slices.Clone(f.job.Rows)

	f.apply(f.s.reopen(1, "d1"))
	j := f.job
	if j.Generation != 1 || j.Final != "" || !j.CompletedAt.IsZero() || j.Status() != domain.JobStatusInProgress {
		t.Fatalf("reopened: gen=%d final=%q completed=%v status=%s", j.Generation, j.Final, j.CompletedAt, j.Status())
	}
	if r := j.Rows[0]; r != (domain.Row{DocumentID: "d1", Status: domain.RowInProgress}) || j.Rows[1] != before.Rows[1] {
		t.Errorf("reopened rows = %+v", j.Rows)
	}
	if !reflect.DeepEqual(snap.Rows, before.Rows) {
		t.Errorf("reopen mutated its receiver's rows: %+v", snap.Rows)
	}
	if _, d := f.job.Duration(); d {
		t.Error("duration available while reopened")
	}
	refused(t, func(s *seq) (domain.Job, domain.Event) { return j, s.complete(0, domain.JobStatusCompleted) }, domain.ErrJobNotDone)
	refused(t, func(s *seq) (domain.Job, domain.Event) { return j, s.reopen(2, "d1") }, domain.ErrJobNotReopenable)

	f.finish("d1", "completed")
	f.apply(f.s.complete(1, domain.JobStatusCompleted))
	if f.job.Status() != domain.JobStatusCompleted || f.job.Progress() != (domain.Progress{Done: 2, Total: 2}) {
		t.Errorf("completed again: status=%s progress=%+v", f.job.Status(), f.job.Progress())
	}
	f.apply(f.s.reopen(2, "d2"))
	if f.job.Generation != 2 || f.job.Status() != domain.JobStatusInProgress {
		t.Errorf("second reopen: gen=%d status=%s", f.job.Generation, f.job.Status())
	}
}

func TestJobDuration(t *testing.T) {
	t.Parallel()
	t.Run("preprocess: longest row", func(t *testing.T) {
		t.Parallel()
		f := newJobFold(t, newSeq(), domain.JobPreprocess, "d1", "d2")
		s, pre := f.s, domain.PhasePreprocess
		f.doc(s.queue("d1", pre, 1, false, "J"))
		f.doc(s.queue("d2", pre, 1, false, "J"))
		c1 := s.claim("d1", pre, 1, "c1")
		f.doc(c1)
		f.doc(s.claim("d2", pre, 1, "c2"))
		f.doc(s.preprocessed("d2", "c2"))
		p1 := s.preprocessed("d1", "c1")
		f.doc(p1)
		if _, ok := f.job.Duration(); ok {
			t.Fatal("duration before the job is terminal")
		}
		f.apply(s.complete(0, domain.JobStatusCompleted))
		want := p1.Meta.OccurredAt.Sub(c1.Meta.OccurredAt)
		if got, ok := f.job.Duration(); !ok || got != want {
			t.Errorf("Duration = %v %v, want %v", got, ok, want)
		}
	})
	t.Run("extraction: created to completed", func(t *testing.T) {
		t.Parallel()
		f := newJobFold(t, newSeq(), domain.JobExtraction, "d1")
		f.finish("d1", "completed")
		if _, ok := f.job.Duration(); ok {
			t.Fatal("duration before the job is terminal")
		}
		done := f.s.complete(0, domain.JobStatusCompleted)
		f.apply(done)
		want := done.Meta.OccurredAt.Sub(f.job.CreatedAt)
		if got, ok := f.job.Duration(); !ok || got != want || want <= 0 {
			t.Errorf("Duration = %v %v, want %v", got, ok, want)
		}
	})
}
