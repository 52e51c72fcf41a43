package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docket/docket/api"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// claimGate holds claimed work items that match, each until released by
// file name (or until the node shuts down), and reports every hold.
type claimGate struct {
	match   func(eventstore.WorkItem) bool
	mu      sync.Mutex
	open    map[string]chan struct{}
	claimed chan string
}

func newGate(match func(eventstore.WorkItem) bool) *claimGate {
	return &claimGate{match: match, open: map[string]chan struct{}{}, claimed: make(chan string, 256)}
}

func (g *claimGate) ch(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[name] == nil {
		g.open[name] = make(chan struct{})
	}
	return g.open[name]
}

func (g *claimGate) afterClaim(ctx context.Context, it eventstore.WorkItem) {
	if !g.match(it) {
		return
	}
	g.claimed <- it.FileName
	select {
	case <-g.ch(it.FileName):
	case <-ctx.Done():
	}
}

func (g *claimGate) release(name string) { close(g.ch(name)) }

func prefixed(p string) func(eventstore.WorkItem) bool {
	return func(it eventstore.WorkItem) bool { return strings.HasPrefix(it.FileName, p) }
}

func (tn *testNode) startJob(path string, ids ...string) string {
	tn.t.Helper()
	var out struct {
		JobID string `json:"jobId"`
	}
	if code := tn.postJSON(path, map[string]any{"documentIds": ids}, &out); code != http.StatusAccepted || out.JobID == "" {
		tn.t.Fatalf("POST %s: %d %+v", path, code, out)
	}
	return out.JobID
}

// jobRaw GETs a job and returns it both decoded and as a generic map, so a
// test can require a key to be absent.
func (tn *testNode) jobRaw(id string) (jobView, map[string]any) {
	tn.t.Helper()
	r := tn.call("GET", "/v1/jobs/"+id, "Bearer "+tn.key, nil, "", nil)
	var v jobView
	var m map[string]any
	if r.code != http.StatusOK || json.Unmarshal(r.body, &v) != nil || json.Unmarshal(r.body, &m) != nil {
		tn.t.Fatalf("GET job %s: %d %s", id, r.code, r.body)
	}
	return v, m
}

func (tn *testNode) cancel(id string) (int, jobView) {
	tn.t.Helper()
	var v jobView
	return tn.do("POST", "/v1/jobs/"+id+"/cancel", nil, "", nil, &v), v
}

// runHandle signs the single-document preprocess job of a document's attempt.
func (tn *testNode) runHandle(doc string, attempt int, org string, exp time.Time) string {
	tn.t.Helper()
	s, err := tn.cfg.signer()
	if err != nil {
		tn.t.Fatal(err)
	}
	return s.Sign(org, api.Handle{Kind: api.HandleKindDocumentPreprocess, Subject: api.DocumentRunSubject(doc, attempt), Expires: exp})
}

// jobID is the internal job id a handle names.
func (tn *testNode) jobID(handle string) string {
	tn.t.Helper()
	s, err := tn.cfg.signer()
	if err != nil {
		tn.t.Fatal(err)
	}
	h, err := s.Verify(domain.OrgID("default"), handle)
	if err != nil {
		tn.t.Fatal(err)
	}
	return h.Subject
}

func rowsOf(j jobView) map[string]string {
	m := map[string]string{}
	for _, r := range j.Result.Documents {
		m[r.DocumentID] = r.Status
	}
	return m
}

func wantJob(t *testing.T, what string, j jobView, status string, done, total, failed int, rows map[string]string) {
	t.Helper()
	p := j.Progress
	if j.Status != status || p == nil || p.Done != done || p.Total != total || p.Failed != failed || (rows != nil && !equalMaps(rowsOf(j), rows)) {
		t.Fatalf("%s: got %s %+v rows %v; want %s %d/%d/%d rows %v", what, j.Status, p, rowsOf(j), status, done, total, failed, rows)
	}
	if (j.Duration != nil) != domain.JobStatus(status).Terminal() {
		t.Fatalf("%s: duration %v with status %s", what, j.Duration, status)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// wantRun checks a single-document preprocess job.
func wantRun(t *testing.T, tn *testNode, h, status, file string, pages int) {
	t.Helper()
	v, m := tn.jobRaw(h)
	_, hasProgress := m["progress"]
	terminal := domain.JobStatus(status).Terminal()
	started := m["startedAt"] != nil
	if v.Type != "document_preprocess" || v.Status != status || v.FileName != file || hasProgress ||
		(v.Duration != nil) != (terminal && started) || (m["completedAt"] != nil) != terminal {
		t.Fatalf("run %s: %+v / %v; want %s", file, v, m, status)
	}
	if (pages == 0) != (v.NumPages == nil) || (v.NumPages != nil && *v.NumPages != pages) {
		t.Fatalf("run %s: numPages %v, want %d", file, v.NumPages, pages)
	}
}

// TestJobsPreprocessStatuses walks a batch preprocess job and a
// single-document preprocess job through every status and row status.
func TestJobsPreprocessStatuses(t *testing.T) {
	t.Parallel()
	hold, g := make(chan struct{}), newGate(prefixed("held"))
	tn := setup(t, func(c *Config) { c.holdWorker, c.afterClaim, c.WorkerConcurrency = hold, g.afterClaim, 1 })
	org, exp := domain.OrgID("default"), time.Now().Add(time.Hour)
	h1 := tn.uploadJobsDoc("held-1.txt", textInvoice(1))
	j1 := tn.startJob("/v1/documents/process", h1)
	v, m := tn.jobRaw(j1)
	wantJob(t, "queued", v, "queued", 0, 1, 0, map[string]string{h1: "in_progress"}) // a preprocess row is never queued
	if m["completedAt"] != nil || m["startedAt"] != nil || v.Type != "preprocess" {
		t.Fatalf("queued job: %v", m)
	}
	run1 := tn.runHandle(h1, 1, org, exp)
	wantRun(t, tn, run1, "queued", "held-1.txt", 0)

	close(hold)
	<-g.claimed // h1 claimed and held: the one worker slot is busy
	v = tn.waitJob(j1, func(j jobView) bool { return j.Status == "in_progress" })
	wantJob(t, "in_progress", v, "in_progress", 0, 1, 0, map[string]string{h1: "in_progress"})
	tn.waitJob(run1, func(j jobView) bool { return j.Status == "in_progress" })
	wantRun(t, tn, run1, "in_progress", "held-1.txt", 0)

	// Not started: cancelling the single-document job of b, then the
	// batch job, cancels the rows at once; the job ends cancelled.
	a, b := tn.uploadJobsDoc("a.txt", textInvoice(2)), tn.uploadJobsDoc("b.txt", textInvoice(3))
	j2 := tn.startJob("/v1/documents/process", a, b)
	runB := tn.runHandle(b, 1, org, exp)
	if code, rv := tn.cancel(runB); code != http.StatusAccepted || rv.Status != "cancelled" {
		t.Fatalf("cancel run: %d %+v", code, rv)
	}
	wantRun(t, tn, runB, "cancelled", "b.txt", 0)
	if code, cv := tn.cancel(j2); code != http.StatusAccepted || !equalMaps(rowsOf(cv), map[string]string{a: "cancelled", b: "cancelled"}) {
		t.Fatalf("cancel j2: %d %+v", code, cv)
	}
	v = tn.waitJob(j2, func(j jobView) bool { return j.Status == "cancelled" })
	wantJob(t, "cancelled", v, "cancelled", 2, 2, 0, map[string]string{a: "cancelled", b: "cancelled"})

	// Running: a job with one row running and one waiting. Cancel cancels
	// the waiting row; the job stays open until the running row ends.
	h2, h3 := tn.uploadJobsDoc("held-2.txt", textInvoice(4)), tn.uploadJobsDoc("held-3.txt", textInvoice(5))
	j3 := tn.startJob("/v1/documents/process", h2, h3)
	g.release("held-1.txt")
	v = tn.waitJob(j1, func(j jobView) bool { return j.Status == "completed" })
	wantJob(t, "completed", v, "completed", 1, 1, 0, map[string]string{h1: "completed"})
	wantRun(t, tn, run1, "completed", "held-1.txt", 1)
	first := <-g.claimed
	running, waiting := h2, h3
	if first != "held-2.txt" {
		running, waiting = h3, h2
	}
	tn.waitJob(j3, func(j jobView) bool { return j.Status == "in_progress" })
	code, cv := tn.cancel(j3)
	if code != http.StatusAccepted || cv.Status != "in_progress" || rowsOf(cv)[waiting] != "cancelled" || rowsOf(cv)[running] != "in_progress" {
		t.Fatalf("cancel j3 with %s running: %d %+v", first, code, cv)
	}
	g.release("held-2.txt") // the waiting one's item still comes, to a canceled document
	g.release("held-3.txt")
	v = tn.waitJob(j3, func(j jobView) bool { return j.Status == "cancelled" })
	docs, _ := foldLog(tn.orgLog())
	wantRow := map[domain.Status]string{domain.StatusPreprocessed: "completed", domain.StatusCanceled: "cancelled"}[docs[running].Status]
	wantJob(t, "cancelled with a running row", v, "cancelled", 2, 2, 0, map[string]string{running: wantRow, waiting: "cancelled"})

	// Failures: one corrupt of two, then every document corrupt.
	bad, _ := corpus(t, "inv-pacific-usd-truncated.pdf")
	good, x1, x2, x3 := tn.uploadJobsDoc("g.txt", textInvoice(6)), tn.uploadJobsDoc("x1.pdf", bad), tn.uploadJobsDoc("x2.pdf", bad), tn.uploadJobsDoc("x3.pdf", bad)
	j4, j5 := tn.startJob("/v1/documents/process", good, x1), tn.startJob("/v1/documents/process", x2, x3)
	v = tn.waitJob(j4, func(j jobView) bool { return domain.JobStatus(j.Status).Terminal() })
	wantJob(t, "some failed", v, "completed_with_failures", 2, 2, 1, map[string]string{good: "completed", x1: "failed"})
	v = tn.waitJob(j5, func(j jobView) bool { return domain.JobStatus(j.Status).Terminal() })
	wantJob(t, "all failed", v, "failed", 2, 2, 2, map[string]string{x2: "failed", x3: "failed"})
	for _, r := range v.Result.Documents {
		if r.Error == nil || r.Error.Code != "corrupt_document" {
			t.Fatalf("failed row without its error: %+v", r)
		}
	}
	wantRun(t, tn, tn.runHandle(x2, 1, org, exp), "failed", "x2.pdf", 0)
	if _, m := tn.jobRaw(tn.runHandle(x2, 1, org, exp)); m["error"] == nil {
		t.Fatalf("failed run without its error: %v", m)
	}
	// Expanded rows name their documents; an attempt that never ran is no job.
	var ex struct {
		Result struct {
			Documents []struct {
				FileName string `json:"fileName"`
				NumPages *int   `json:"numPages"`
			} `json:"documents"`
		} `json:"result"`
	}
	if tn.get("/v1/jobs/"+j4+"?expand=documents", &ex) != http.StatusOK || len(ex.Result.Documents) != 2 || ex.Result.Documents[0].FileName != "g.txt" || ex.Result.Documents[0].NumPages == nil {
		t.Fatalf("expand: %+v", ex)
	}
	if code := tn.get("/v1/jobs/"+tn.runHandle(h1, 2, org, exp), nil); code != http.StatusNotFound {
		t.Fatalf("attempt 2 of %s: %d", h1, code)
	}
	tn.verify()
}

// TestJobsExtractionStatuses walks an extraction job through every status
// and row status; its rows never carry an error.
func TestJobsExtractionStatuses(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	g := newGate(func(it eventstore.WorkItem) bool {
		return strings.HasPrefix(it.FileName, "held") || strings.HasPrefix(it.FileName, "hx") && it.Phase == domain.PhaseExtract
	})
	tn := setup(t, func(c *Config) { c.holdWorker, c.afterClaim, c.WorkerConcurrency = hold, g.afterClaim, 1 })
	const path = "/v1/extraction-sessions"
	check := func(what, id, status string, done, total, failed int, rows map[string]string) jobView {
		t.Helper()
		v := tn.waitJob(id, func(j jobView) bool { return j.Status == status })
		wantJob(t, what, v, status, done, total, failed, rows)
		_, m := tn.jobRaw(id)
		for _, r := range m["result"].(map[string]any)["documents"].([]any) {
			if _, ok := r.(map[string]any)["error"]; ok {
				t.Fatalf("%s: extraction row with an error: %v", what, r)
			}
		}
		if _, ok := m["result"].(map[string]any)["results"]; ok != (status == "completed" || status == "completed_with_failures" || status == "failed") || v.Type != "extraction" {
			t.Fatalf("%s: result %v", what, m["result"])
		}
		return v
	}
	he := tn.uploadJobsDoc("held-e.txt", textInvoice(1))
	e1 := tn.startJob(path, he)
	check("queued", e1, "queued", 0, 1, 0, map[string]string{he: "queued"})
	close(hold)
	<-g.claimed
	check("preprocessing", e1, "in_progress", 0, 1, 0, map[string]string{he: "queued"})

	q := tn.uploadJobsDoc("q.txt", textInvoice(2))
	e2 := tn.startJob(path, q)
	if code, _ := tn.cancel(e2); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	check("cancelled", e2, "cancelled", 1, 1, 0, map[string]string{q: "cancelled"})
	g.release("held-e.txt")
	check("completed", e1, "completed", 1, 1, 0, map[string]string{he: "completed"})

	hx := tn.uploadJobsDoc("hx.txt", textInvoice(3))
	tn.waitJob(tn.startJob("/v1/documents/process", hx), func(j jobView) bool { return j.Status == "completed" })
	e3 := tn.startJob(path, hx)
	<-g.claimed
	check("extracting", e3, "in_progress", 0, 1, 0, map[string]string{hx: "in_progress"})
	g.release("hx.txt")
	check("extracted", e3, "completed", 1, 1, 0, map[string]string{hx: "completed"})

	data, _ := corpus(t, "inv-pacific-usd-truncated.pdf")
	bad := tn.uploadJobsDoc("bad.pdf", data)
	check("failed", tn.startJob(path, bad), "failed", 1, 1, 1, map[string]string{bad: "failed"})
	check("some failed", tn.startJob(path, hx, bad), "completed_with_failures", 2, 2, 1, map[string]string{hx: "completed", bad: "failed"})
	tn.verify()
}

// TestJobCancelRacingWorker cancels a large job while the worker runs it:
// every row ends as the log decides, once, and the job ends cancelled.
// Cancelling again is a no-op that answers the same state.
func TestJobCancelRacingWorker(t *testing.T) {
	t.Parallel()
	const n = 40
	var held atomic.Int32
	race, after := make(chan struct{}), make(chan struct{})
	tn := setup(t, func(c *Config) {
		c.afterClaim = func(ctx context.Context, _ eventstore.WorkItem) {
			// Every slot is busy until the cancel is sent; two stay busy
			// until it is answered, so the job is open when it lands.
			release := race
			if k := held.Add(1); k > 4 {
				return
			} else if k > 2 {
				release = after
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	var ids []string
	for i := range n {
		ids = append(ids, tn.uploadJobsDoc(fmt.Sprintf("inv-%02d.txt", i), textInvoice(i)))
	}
	job := tn.startJob("/v1/documents/process", ids...)
	tn.waitJob(job, func(j jobView) bool { return j.Status == "in_progress" })
	close(race) // the worker and the cancel now race for the queued rows
	if code, _ := tn.cancel(job); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	close(after)
	v := tn.waitJob(job, func(j jobView) bool { return domain.JobStatus(j.Status).Terminal() })
	tn.waitWorkDrained()
	recs := tn.orgLog()
	docs, terminal := foldLog(recs)
	want := map[domain.Status]string{domain.StatusPreprocessed: "completed", domain.StatusCanceled: "cancelled", domain.StatusFailed: "failed"}
	counts := map[string]int{}
	for _, r := range v.Result.Documents {
		d := docs[r.DocumentID]
		if r.Status != want[d.Status] || terminal[r.DocumentID] != 1 || d.Attempt != 1 {
			t.Errorf("%s: row %s, log folds to %s (attempt %d, %d terminal transitions)", d.FileName, r.Status, d.Status, d.Attempt, terminal[r.DocumentID])
		}
		counts[r.Status]++
	}
	t.Logf("rows: %v", counts)
	if v.Status != "cancelled" || v.Progress.Done != n || v.Progress.Total != n || counts["cancelled"]+counts["completed"] != n {
		t.Fatalf("job: %+v", v)
	}
	// One outcome: the coordinator may append it twice, with one id.
	outcomes := map[string]bool{}
	for _, rec := range recs {
		switch ev := rec.Event.(type) {
		case *domain.JobCompleted:
			t.Errorf("cancelled job has a JobCompleted: %+v", ev)
		case *domain.JobCancelled:
			outcomes[ev.Meta.EventID] = true
		}
	}
	if len(outcomes) != 1 {
		t.Fatalf("JobCancelled event ids: %v", outcomes)
	}
	before := tn.orgEnd()
	code, again := tn.cancel(job)
	if code != http.StatusAccepted || again.Status != "cancelled" || *again.Progress != *v.Progress || !equalMaps(rowsOf(again), rowsOf(v)) {
		t.Fatalf("cancel again: %d %+v", code, again)
	}
	if after := tn.orgEnd(); after != before {
		t.Fatalf("cancel of a terminal job appended %d records", after-before)
	}
	tn.verify()
}

func (tn *testNode) orgEnd() int64 {
	tn.t.Helper()
	end, err := tn.n.store.EndOffsets(context.Background())
	if err != nil {
		tn.t.Fatal(err)
	}
	return end[tn.n.store.PartitionFor(domain.OrgID("default"))]
}

// TestJobForceReopens: force reprocessing reopens a completed preprocess
// job (completed -> in_progress -> completed), recorded as JobReopened.
func TestJobForceReopens(t *testing.T) {
	t.Parallel()
	var holding atomic.Bool
	g := newGate(func(eventstore.WorkItem) bool { return holding.Load() })
	tn := setup(t, func(c *Config) { c.afterClaim = g.afterClaim })
	doc := tn.uploadJobsDoc("r.txt", textInvoice(7))
	job := tn.startJob("/v1/documents/process", doc)
	tn.waitJob(job, func(j jobView) bool { return j.Status == "completed" })
	holding.Store(true)
	var again struct {
		JobID string `json:"jobId"`
	}
	if code := tn.postJSON("/v1/documents/process", map[string]any{"documentIds": []string{doc}, "force": true}, &again); code != http.StatusAccepted {
		t.Fatalf("force: %d", code)
	}
	<-g.claimed
	v := tn.waitJob(job, func(j jobView) bool { return j.Status == "in_progress" })
	wantJob(t, "reopened", v, "in_progress", 0, 1, 0, map[string]string{doc: "in_progress"})
	if _, m := tn.jobRaw(job); m["completedAt"] != nil {
		t.Fatalf("reopened job still has completedAt: %v", m)
	}
	g.release("r.txt")
	v = tn.waitJob(job, func(j jobView) bool { return j.Status == "completed" })
	wantJob(t, "completed again", v, "completed", 1, 1, 0, map[string]string{doc: "completed"})
	tn.waitJob(again.JobID, func(j jobView) bool { return j.Status == "completed" })
	var seq []string
	id := tn.jobID(job)
	for _, rec := range tn.orgLog() {
		switch ev := rec.Event.(type) {
		case *domain.JobCompleted:
			if ev.JobID == id {
				seq = append(seq, fmt.Sprintf("completed/%d", ev.Generation))
			}
		case *domain.JobReopened:
			if ev.JobID == id {
				seq = append(seq, fmt.Sprintf("reopened/%d", ev.Generation))
			}
		}
	}
	if want := []string{"completed/0", "reopened/1", "completed/1"}; !slices.Equal(seq, want) {
		t.Fatalf("log of job: %v, want %v", seq, want)
	}
	org := domain.OrgID("default")
	wantRun(t, tn, tn.runHandle(doc, 1, org, time.Time{}), "completed", "r.txt", 1)
	wantRun(t, tn, tn.runHandle(doc, 2, org, time.Time{}), "completed", "r.txt", 1)
	tn.verify()
}

// TestJobHandleForgeries: expired, other-org, unknown, truncated and
// bit-flipped handles answer one byte-identical 404.
func TestJobHandleForgeries(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	otherKey := tn.createOrg("other")
	doc := tn.uploadJobsDoc("a.txt", textInvoice(1))
	job := tn.startJob("/v1/documents/process", doc)
	tn.waitJob(job, func(j jobView) bool { return j.Status == "completed" })
	s, err := tn.cfg.signer()
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Verify(domain.OrgID("default"), job)
	if err != nil {
		t.Fatal(err)
	}
	def, other := domain.OrgID("default"), domain.OrgID("other")
	hdr := map[string]string{"X-Request-Id": "req_same"}
	get := func(handle, key string) reply {
		return tn.call("GET", "/v1/jobs/"+handle, "Bearer "+key, nil, "", hdr)
	}
	ref := get(s.Sign(def, api.Handle{Kind: api.HandleKindBatchPreprocess, Subject: "job_unknown", Expires: h.Expires}), tn.key)
	ref.envelope(t, http.StatusNotFound, "not_found")
	cases := map[string]reply{
		"expired":          get(s.Sign(def, api.Handle{Kind: h.Kind, Subject: h.Subject, Expires: time.Now().Add(-time.Minute)}), tn.key),
		"signed for other": get(s.Sign(other, h), tn.key),
		"other org's key":  get(job, otherKey),
		"expired run":      get(tn.runHandle(doc, 1, def, time.Now().Add(-time.Second)), tn.key),
		"other org's run":  get(tn.runHandle(doc, 1, other, time.Time{}), tn.key),
		"session prefix":   get("ses_"+job[4:], tn.key),
		"garbage":          get("job_AAAA", tn.key),
		"bare prefix":      get("job_", tn.key),
	}
	for _, n := range []int{1, 2, 3, len(job) / 2, len(job) - 4} {
		cases[fmt.Sprintf("truncated by %d", n)] = get(job[:len(job)-n], tn.key)
	}
	raw, err := base64.RawURLEncoding.DecodeString(job[4:])
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for bit := range 8 {
			f := slices.Clone(raw)
			f[i] ^= 1 << bit
			cases[fmt.Sprintf("bit %d of byte %d", bit, i)] = get("job_"+base64.RawURLEncoding.EncodeToString(f), tn.key)
		}
	}
	for i := 4; i < len(job); i++ {
		c := []byte(job)
		c[i] = map[bool]byte{true: 'B', false: 'A'}[c[i] == 'A']
		cases[fmt.Sprintf("char %d", i)] = get(string(c), tn.key)
	}
	strip := func(h http.Header) http.Header {
		h = h.Clone()
		for _, k := range []string{"Date", "Ratelimit-Remaining", "Ratelimit-Reset"} {
			h.Del(k)
		}
		return h
	}
	for name, r := range cases {
		if r.code != ref.code || !bytes.Equal(r.body, ref.body) || fmt.Sprint(strip(r.hdr)) != fmt.Sprint(strip(ref.hdr)) {
			t.Errorf("%s: %d %s %v; want %d %s %v", name, r.code, r.body, strip(r.hdr), ref.code, ref.body, strip(ref.hdr))
		}
	}
	if r := get(job, tn.key); r.code != http.StatusOK {
		t.Fatalf("the genuine handle: %d %s", r.code, r.body)
	}
}

// TestJobRestartMidJob: a node stopped while a job's documents are claimed
// and held completes the job after a restart, with the progress a rebuild
// from offset 0 gives.
func TestJobRestartMidJob(t *testing.T) {
	t.Parallel()
	const n = 12
	stuck := func(ctx context.Context, it eventstore.WorkItem) {
		var i int
		fmt.Sscanf(it.FileName, "inv-%d.txt", &i)
		if i%2 == 1 {
			<-ctx.Done()
		}
	}
	tn := setup(t, func(c *Config) { c.afterClaim, c.WorkerConcurrency = stuck, n })
	var ids []string
	for i := range n {
		ids = append(ids, tn.uploadJobsDoc(fmt.Sprintf("inv-%02d.txt", i), textInvoice(i)))
	}
	job := tn.startJob("/v1/documents/process", ids...)
	tn.waitJob(job, func(j jobView) bool { return j.Progress.Done == n/2 })
	tn.stop()
	tn.cfg.afterClaim = nil
	tn.start()
	v := tn.waitJob(job, func(j jobView) bool { return j.Status == "completed" })
	wantJob(t, "after restart", v, "completed", n, n, 0, nil)
	tn.verify() // the job view, progress included, equals a rebuild
	// One outcome per generation: a duplicate after the restart may be
	// appended, but with the same deterministic id.
	outcomes, id := map[string]bool{}, tn.jobID(job)
	for _, rec := range tn.orgLog() {
		if c, ok := rec.Event.(*domain.JobCompleted); ok && c.JobID == id {
			outcomes[c.Meta.EventID] = true
		}
	}
	if len(outcomes) != 1 {
		t.Fatalf("JobCompleted event ids: %v", outcomes)
	}
}

// TestJobBadRequests: each malformed request is a 4xx envelope and appends
// no job.
func TestJobBadRequests(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	otherKey := tn.createOrg("other")
	doc := tn.uploadJobsDoc("a.txt", textInvoice(1))
	body, ct := multipartBody(t, "o.txt", textInvoice(2), "")
	var od struct {
		DocumentID string `json:"documentId"`
	}
	tn.call("POST", "/v1/documents", "Bearer "+otherKey, body, ct, nil).decode(t, http.StatusCreated, &od)
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("doc_%d", i)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	cases := []struct {
		name, ct, body string
		status         int
		code           string
	}{
		{"text/plain", "text/plain", js(map[string]any{"documentIds": []string{doc}}), 415, "unsupported_media_type"},
		{"no content type", "", js(map[string]any{"documentIds": []string{doc}}), 415, "unsupported_media_type"},
		{"malformed", "application/json", `{"documentIds": [`, 400, "invalid_request"},
		{"not an object", "application/json", `["` + doc + `"]`, 400, "invalid_request"},
		{"trailing data", "application/json", js(map[string]any{"documentIds": []string{doc}}) + "{}", 400, "invalid_request"},
		{"unknown field", "application/json", `{"documentIds": ["` + doc + `"], "priority": 1}`, 400, "invalid_request"},
		{"empty list", "application/json", `{"documentIds": []}`, 400, "invalid_request"},
		{"no list", "application/json", `{}`, 400, "invalid_request"},
		{"over 1000", "application/json", js(map[string]any{"documentIds": many}), 400, "invalid_request"},
		{"duplicates", "application/json", js(map[string]any{"documentIds": []string{doc, doc}}), 400, "invalid_request"},
		{"empty id", "application/json", js(map[string]any{"documentIds": []string{""}}), 400, "invalid_request"},
		{"unknown id", "application/json", js(map[string]any{"documentIds": []string{doc, "doc_nope"}}), 404, "not_found"},
		{"other org's id", "application/json", js(map[string]any{"documentIds": []string{od.DocumentID}}), 404, "not_found"},
	}
	for _, path := range []string{"/v1/documents/process", "/v1/extraction-sessions"} {
		for _, c := range cases {
			r := tn.call("POST", path, "Bearer "+tn.key, strings.NewReader(c.body), c.ct, nil)
			r.what = path + " " + c.name
			r.envelope(t, c.status, c.code)
		}
	}
	r := tn.call("POST", "/v1/extraction-sessions", "Bearer "+tn.key, strings.NewReader(js(map[string]any{"documentIds": []string{doc}, "force": true})), "application/json", nil)
	r.envelope(t, http.StatusBadRequest, "invalid_request")
	for _, rec := range tn.orgLog() {
		if _, ok := rec.Event.(*domain.JobCreated); ok {
			t.Fatalf("a rejected request appended %+v", rec.Event)
		}
	}
}

// TestJobCancelSparesOtherJobs: a job that joined another job's run, queued
// or running, is cancelled without taking that run from the other job.
func TestJobCancelSparesOtherJobs(t *testing.T) {
	t.Parallel()
	hold, g := make(chan struct{}), newGate(prefixed("held"))
	tn := setup(t, func(c *Config) { c.holdWorker, c.afterClaim = hold, g.afterClaim })
	queued, running := tn.uploadJobsDoc("q.txt", textInvoice(1)), tn.uploadJobsDoc("held.txt", textInvoice(2))
	a := tn.startJob("/v1/documents/process", queued, running)
	b := tn.startJob("/v1/documents/process", queued) // joins a's queued run
	if code, _ := tn.cancel(b); code != http.StatusAccepted {
		t.Fatalf("cancel b: %d", code)
	}
	close(hold)
	<-g.claimed
	c := tn.startJob("/v1/documents/process", running) // joins a's running run
	if code, _ := tn.cancel(c); code != http.StatusAccepted {
		t.Fatalf("cancel c: %d", code)
	}
	g.release("held.txt")
	// The cancelled jobs end cancelled; their rows followed the shared run.
	v := tn.waitJob(b, func(j jobView) bool { return j.Status == "cancelled" })
	wantJob(t, "b", v, "cancelled", 1, 1, 0, map[string]string{queued: "completed"})
	v = tn.waitJob(c, func(j jobView) bool { return j.Status == "cancelled" })
	wantJob(t, "c", v, "cancelled", 1, 1, 0, map[string]string{running: "completed"})
	v = tn.waitJob(a, func(j jobView) bool { return domain.JobStatus(j.Status).Terminal() })
	wantJob(t, "the job nobody cancelled", v, "completed", 2, 2, 0, map[string]string{queued: "completed", running: "completed"})
}
