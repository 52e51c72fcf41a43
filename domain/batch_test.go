package domain_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// tracker folds document events and maintains batch "b" the way a projection
// does: Track on every transition, Summarize when Track asks for it.
type tracker struct {
	t    *testing.T
	ids  []string
	docs map[string]domain.Document
	b    domain.Batch
}

func newTracker(t *testing.T) *tracker {
	return &tracker{t: t, docs: map[string]domain.Document{}, b: domain.NewBatch("org_acme", "b")}
}

func (tr *tracker) list() []domain.Document {
	out := make([]domain.Document, 0, len(tr.ids))
	for _, id := range tr.ids {
		out = append(out, tr.docs[id])
	}
	return out
}

func (tr *tracker) move(before, after domain.Document) {
	if before.Status == "" {
		tr.ids = append(tr.ids, after.ID)
	}
	tr.docs[after.ID] = after
	b, recompute := tr.b.Track(before, after)
	if recompute {
		b = domain.Summarize("org_acme", "b", tr.list())
	}
	tr.b = b
}

// apply folds e and fails the test if it is refused. BatchDeleted goes to
// every uploaded document.
func (tr *tracker) apply(e domain.Event) {
	tr.t.Helper()
	if _, ok := e.(*domain.BatchDeleted); ok {
		for _, id := range tr.ids {
			before := tr.docs[id]
			after, err := before.Apply(e)
			if err != nil {
				tr.t.Fatalf("BatchDeleted on %s: %v", id, err)
			}
			tr.move(before, after)
		}
		return
	}
	before := tr.docs[domain.DocumentIDOf(e)]
	after, err := before.Apply(e)
	if err != nil {
		tr.t.Fatalf("%s on %s (%s): %v", e.Type(), before.ID, before.Status, err)
	}
	tr.move(before, after)
}

// check requires the tracked batch to equal a recomputation.
func (tr *tracker) check(label string) {
	tr.t.Helper()
	want := domain.Summarize("org_acme", "b", tr.list())
	if got := tr.b; !reflect.DeepEqual(got, want) {
		tr.t.Fatalf("%s: tracked batch differs from Summarize:\n got %+v\nwant %+v", label, got, want)
	}
}

func TestBatchStatus(t *testing.T) {
	t.Parallel()
	S := func(ss ...domain.Status) []domain.Status { return ss }
	const (
		up, q, pp   = domain.StatusUploaded, domain.StatusQueued, domain.StatusPreprocessing
		pd, ex, ok  = domain.StatusPreprocessed, domain.StatusExtracting, domain.StatusSucceeded
		bad, cancel = domain.StatusFailed, domain.StatusCanceled
	)
	cases := []struct {
		name    string
		docs    []domain.Status
		want    domain.Public
		allDone bool
	}{
		{"empty batch", nil, domain.PublicQueued, false},
		{"uploaded", S(up), domain.PublicQueued, false},
		{"queued", S(q, ok), domain.PublicQueued, false},
		{"preprocessed only is still queued", S(pd, ok), domain.PublicQueued, false},
		{"preprocessing", S(pp, q, ok), domain.PublicProcessing, false},
		{"extracting beats queued", S(up, ex, bad, cancel), domain.PublicProcessing, false},
		{"all canceled", S(cancel, cancel), domain.PublicCanceled, true},
		{"all failed", S(bad, bad), domain.PublicFailed, true},
		{"failed and canceled", S(bad, cancel, cancel), domain.PublicFailed, true},
		{"all succeeded", S(ok), domain.PublicSucceeded, true},
		{"succeeded and failed", S(bad, ok, bad), domain.PublicSucceeded, true},
		{"succeeded, failed and canceled", S(cancel, ok, bad), domain.PublicSucceeded, true},
		{"succeeded and canceled", S(cancel, ok), domain.PublicSucceeded, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var docs []domain.Document
			for i, st := range tc.docs {
				docs = append(docs, domain.Document{ID: fmt.Sprint(i), Status: st, CreatedAt: t0})
			}
			b := domain.Summarize("org_acme", "b", docs)
			if got := b.Status(); got != tc.want {
				t.Errorf("Status() = %s, want %s", got, tc.want)
			}
			if got := b.AllDone(); got != tc.allDone {
				t.Errorf("AllDone() = %v, want %v", got, tc.allDone)
			}
		})
	}
}

func TestBatchTimestamps(t *testing.T) {
	t.Parallel()
	s, tr := newSeq(), newTracker(t)
	var zero time.Time
	at := func(e domain.Event) time.Time { tr.apply(e); tr.check(e.Type()); return e.Header().OccurredAt }
	want := func(label string, status domain.Public, created, started, completed time.Time) {
		t.Helper()
		c, st, done := tr.b.Timestamps()
		if tr.b.Status() != status || !c.Equal(created) || !st.Equal(started) || !done.Equal(completed) {
			t.Errorf("%s: status=%s created=%v started=%v completed=%v, want %s %v %v %v",
				label, tr.b.Status(), c, st, done, status, created, started, completed)
		}
	}
	createdA := at(s.upload("A", "b"))
	at(s.upload("B", "b"))
	want("uploaded", domain.PublicQueued, createdA, zero, zero)
	at(s.queue("A", domain.PhaseFull, 1, false))
	at(s.queue("B", domain.PhaseFull, 1, false))
	startA := at(s.claim("A", domain.PhaseFull, 1, "a1"))
	at(s.claim("B", domain.PhaseFull, 1, "b1"))
	at(s.claim("A", domain.PhaseFull, 1, "a2")) // superseding claim keeps the start
	want("running", domain.PublicProcessing, createdA, startA, zero)
	at(s.preprocessed("A", "a2"))
	at(s.succeeded("A", "a2"))
	want("one done, one running", domain.PublicProcessing, createdA, startA, zero)
	doneB := at(s.failed("B", "b1", domain.PhasePreprocess))
	want("all done", domain.PublicSucceeded, createdA, startA, doneB)
	at(s.upload("C", "b"))
	want("new upload", domain.PublicQueued, createdA, startA, zero)
	doneC := at(s.cancel("C"))
	want("new upload canceled", domain.PublicSucceeded, createdA, startA, doneC)
	at(s.queue("B", domain.PhaseFull, 2, false))
	want("retry queued", domain.PublicQueued, createdA, startA, zero)
	at(s.queue("A", domain.PhaseExtract, 2, true)) // A loses the earliest start
	want("both requeued", domain.PublicQueued, createdA, zero, zero)
	startB := at(s.claim("B", domain.PhaseExtract, 2, "b2"))
	at(s.succeeded("B", "b2"))
	at(s.claim("A", domain.PhaseExtract, 2, "a3"))
	want("A running again", domain.PublicProcessing, createdA, startB, zero)
	doneA := at(s.failed("A", "a3", domain.PhaseExtract))
	want("done again", domain.PublicSucceeded, createdA, startB, doneA)
}

// randomStep picks a legal next event for d, or nil when there is none.
func randomStep(r *rand.Rand, s *seq, d domain.Document, id string, claims *int) domain.Event {
	phases := []string{domain.PhaseFull, domain.PhasePreprocess, domain.PhaseExtract}
	anyPhase := func() string { return phases[r.IntN(len(phases))] }
	newClaim := func() string { *claims++; return fmt.Sprintf("%s-c%d", id, *claims) }
	claimPhase := d.Target
	var options []func() domain.Event
	add := func(f func() domain.Event) { options = append(options, f) }
	requeue := func(phase string, force bool) {
		if !d.BatchDeleted {
			add(func() domain.Event { return s.queue(id, phase, d.Attempt+1, force) })
		}
	}
	switch d.Status {
	case "":
		add(func() domain.Event { return s.upload(id, "b") })
	case domain.StatusUploaded:
		requeue(anyPhase(), false)
		add(func() domain.Event { return s.cancel(id) })
	case domain.StatusQueued:
		add(func() domain.Event { return s.claim(id, claimPhase, d.Attempt, newClaim()) })
		add(func() domain.Event { return s.cancel(id) })
	case domain.StatusPreprocessing:
		add(func() domain.Event { return s.preprocessed(id, d.ClaimID) })
		add(func() domain.Event { return s.failed(id, d.ClaimID, domain.PhasePreprocess) })
		add(func() domain.Event { return s.claim(id, claimPhase, d.Attempt, newClaim()) })
	case domain.StatusExtracting:
		add(func() domain.Event {
			return s.succeeded(id, d.ClaimID, domain.LineItem{Description: "item", Amount: float64(r.IntN(100))})
		})
		add(func() domain.Event { return s.failed(id, d.ClaimID, domain.PhaseExtract) })
		add(func() domain.Event { return s.claim(id, claimPhase, d.Attempt, newClaim()) })
	case domain.StatusPreprocessed:
		requeue(domain.PhaseExtract, false)
		requeue(domain.PhaseFull, false)
		requeue(domain.PhasePreprocess, true)
	case domain.StatusSucceeded:
		requeue(anyPhase(), true)
	case domain.StatusFailed:
		requeue(anyPhase(), false)
	}
	if len(options) == 0 {
		return nil
	}
	return options[r.IntN(len(options))]()
}

func TestTrackMatchesSummarize(t *testing.T) {
	t.Parallel()
	for _, skewed := range []bool{false, true} {
		for seed := uint64(1); seed <= 30; seed++ {
			t.Run(fmt.Sprintf("skewed=%v/seed=%d", skewed, seed), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(seed, 0xd0c4e7))
				s, tr := newSeq(), newTracker(t)
				if skewed { // node clocks up to ±30s apart
					s.skew = func() time.Duration { return time.Duration(r.IntN(60)-30) * time.Second }
				}
				ids := []string{"d1", "d2", "d3", "d4", "d5"}
				claims, deleted := 0, false
				for step := range 300 {
					var e domain.Event
					if !deleted && r.IntN(60) == 0 && len(tr.ids) > 0 {
						e, deleted = s.deleteBatch("b"), true
					} else {
						id := ids[r.IntN(len(ids))]
						if e = randomStep(r, s, tr.docs[id], id, &claims); e == nil {
							continue
						}
					}
					tr.apply(e)
					tr.check(fmt.Sprintf("seed %d, step %d (%s)", seed, step, e.Type()))
					total := 0
					for p, n := range tr.b.Counts {
						if n < 0 {
							t.Fatalf("seed %d, step %d: negative count %s=%d", seed, step, domain.PublicStatuses[p], n)
						}
						total += n
					}
					if total != tr.b.Documents || tr.b.Documents != len(tr.ids) {
						t.Fatalf("seed %d, step %d: counts sum %d, documents %d, uploaded %d", seed, step, total, tr.b.Documents, len(tr.ids))
					}
				}
			})
		}
	}
}

func TestValidateNames(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		fn    string
		input string
		want  error // nil: valid
	}{
		{"batch", "invoices-2026_01.v2", nil},
		{"batch", "a", nil},
		{"batch", long(128), nil},
		{"batch", "a..b", nil},
		{"batch", "", domain.ErrInvalidBatchName},
		{"batch", long(129), domain.ErrInvalidBatchName},
		{"batch", "..", domain.ErrInvalidBatchName},
		{"batch", ".", domain.ErrInvalidBatchName},
		{"batch", ".hidden", domain.ErrInvalidBatchName},
		{"batch", "a/b", domain.ErrInvalidBatchName},
		{"batch", "../etc", domain.ErrInvalidBatchName},
		{"batch", `a\b`, domain.ErrInvalidBatchName},
		{"batch", "%2e%2e", domain.ErrInvalidBatchName},
		{"batch", "a b", domain.ErrInvalidBatchName},
		{"batch", "a?b", domain.ErrInvalidBatchName},
		{"batch", "rechnungen-ä", domain.ErrInvalidBatchName},
		{"batch", "ａｂｃ", domain.ErrInvalidBatchName}, // fullwidth letters
		{"batch", "a\x00b", domain.ErrInvalidBatchName},
		{"batch", "a\nb", domain.ErrInvalidBatchName},
		{"batch", "a\xffb", domain.ErrInvalidBatchName},
		{"reference", "", nil},
		{"reference", "PO 4711 / Müller & Söhne — 日本", nil},
		{"reference", "../../etc/passwd", nil}, // a reference is data, never a path
		{"reference", strings.Repeat("ü", 256), nil},
		{"reference", strings.Repeat("ü", 257), domain.ErrInvalidReference},
		{"reference", long(257), domain.ErrInvalidReference},
		{"reference", "a\x00b", domain.ErrInvalidReference},
		{"reference", "line\nbreak", domain.ErrInvalidReference},
		{"reference", "tab\t", domain.ErrInvalidReference},
		{"reference", "del\x7f", domain.ErrInvalidReference},
		{"reference", "esc\x1b[31m", domain.ErrInvalidReference},
		{"reference", "c1\u0085next", domain.ErrInvalidReference},
		{"reference", "csi\u009b31m", domain.ErrInvalidReference},
		{"reference", "bad\xc3", domain.ErrInvalidReference},
		{"reference", "\xff\xfe", domain.ErrInvalidReference},
		{"org", "acme", nil},
		{"org", "a", nil},
		{"org", "acme-2", nil},
		{"org", "a" + long(62), nil},
		{"org", "", domain.ErrInvalidOrgName},
		{"org", "a" + long(63), domain.ErrInvalidOrgName},
		{"org", "Acme", domain.ErrInvalidOrgName},
		{"org", "2acme", domain.ErrInvalidOrgName},
		{"org", "-acme", domain.ErrInvalidOrgName},
		{"org", "ac.me", domain.ErrInvalidOrgName},
		{"org", "..", domain.ErrInvalidOrgName},
		{"org", "a/b", domain.ErrInvalidOrgName},
		{"org", "a_b", domain.ErrInvalidOrgName},
		{"org", "acmé", domain.ErrInvalidOrgName},
		{"org", "ac\x00me", domain.ErrInvalidOrgName},
		{"org", "ac\xffme", domain.ErrInvalidOrgName},
	}
	fns := map[string]func(string) error{
		"batch": domain.ValidateBatchName, "reference": domain.ValidateReference, "org": domain.ValidateOrgName,
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%q", tc.fn, tc.input), func(t *testing.T) {
			t.Parallel()
			err := fns[tc.fn](tc.input)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !domain.IsInvalid(err) || domain.IsNoop(err) {
				t.Fatalf("got %v (invalid=%v), want %v", err, domain.IsInvalid(err), tc.want)
			}
		})
	}
}

// TestCountsFollowPublicStatuses: a count is kept at its status's place
// in PublicStatuses, and a value outside the vocabulary is neither kept nor
// read.
func TestCountsFollowPublicStatuses(t *testing.T) {
	t.Parallel()
	var c domain.Counts
	for i, p := range domain.PublicStatuses {
		if !c.Set(p, i+1) {
			t.Fatalf("Set(%s) refused a status of the vocabulary", p)
		}
		if c[i] != i+1 || c.Of(p) != i+1 {
			t.Fatalf("%s: at %d holds %d, Of says %d; want %d", p, i, c[i], c.Of(p), i+1)
		}
	}
	before := c
	if c.Set("paused", 9) || c != before || c.Of("paused") != 0 {
		t.Fatalf("a status outside the vocabulary changed the counts: %v -> %v, Of %d", before, c, c.Of("paused"))
	}
}
