package projections_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// epoch is time zero of every test log: at=N means epoch + N seconds.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int64) time.Time { return epoch.Add(time.Duration(sec) * time.Second) }

// fixture is one Views directory that can be closed and reopened.
type fixture struct {
	t    testing.TB
	dir  string
	opts []projections.Option
	v    *projections.Views
}

// setup opens fresh views in a temporary directory, closed and removed
// at cleanup. Benchmarks pass their *testing.B: a zero testing.T (which
// they passed until 2026-12-07) never ran its cleanups, so every run left
// its views in $TMPDIR (270 directories, 13 GB, on this machine), and its
// Fatalf did not stop the benchmark.
func setup(t testing.TB, opts ...projections.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir(), opts: opts}
	f.open()
	t.Cleanup(func() {
		if f.v != nil {
			if err := f.v.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return f
}

func (f *fixture) open() {
	f.t.Helper()
	v, err := projections.Open(f.dir, f.opts...)
	if err != nil {
		f.t.Fatalf("open: %v", err)
	}
	f.v = v
}

// restart closes the views and opens the same directory again.
func (f *fixture) restart() {
	f.t.Helper()
	if err := f.v.Close(); err != nil {
		f.t.Fatalf("close: %v", err)
	}
	f.v = nil
	f.open()
}

func (f *fixture) apply(recs ...eventstore.Record) {
	f.t.Helper()
	if err := f.v.ApplyRecords(recs); err != nil {
		f.t.Fatalf("apply: %v", err)
	}
}

// kv is one key/value pair of a Pebble database.
type kv struct{ k, v []byte }

// dump reads every key and value of the views' database, in key order.
func dump(t *testing.T, v *projections.Views) []kv {
	t.Helper()
	it, err := v.DB().NewIter(nil)
	if err != nil {
		t.Fatalf("iter: %v", err)
	}
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{slices.Clone(it.Key()), slices.Clone(it.Value())})
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iter close: %v", err)
	}
	return out
}

// sameDB fails the test unless both dumps are byte-identical.
func sameDB(t *testing.T, what string, a, b []kv) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d keys vs %d keys", what, len(a), len(b))
	}
	n := 0
	for i := 0; i < min(len(a), len(b)) && n < 5; i++ {
		if !bytes.Equal(a[i].k, b[i].k) || !bytes.Equal(a[i].v, b[i].v) {
			t.Errorf("%s: entry %d differs:\n  %q = %s\n  %q = %s", what, i, a[i].k, a[i].v, b[i].k, b[i].v)
			n++
		}
	}
}

// logBuilder hands out consecutive offsets per partition.
type logBuilder struct{ next map[int32]int64 }

func newLog() *logBuilder { return &logBuilder{next: map[int32]int64{}} }

func (l *logBuilder) record(p int32, e domain.Event) eventstore.Record {
	o := l.next[p]
	l.next[p]++
	return eventstore.Record{
		Position:  eventstore.Position{Partition: p, Offset: o},
		Timestamp: e.Header().OccurredAt,
		Event:     e,
	}
}

var eventSeq struct {
	sync.Mutex
	n int
}

func meta(org string, sec int64) domain.Meta {
	eventSeq.Lock()
	eventSeq.n++
	id := fmt.Sprintf("evt_%d", eventSeq.n)
	eventSeq.Unlock()
	return domain.Meta{EventID: id, OrgID: org, OccurredAt: at(sec), Actor: "test"}
}

func strp(s string) *string { return &s }

// gen produces a random log that is mostly legal: it folds its own events
// with domain to pick plausible next steps, and now and then emits a stale,
// fenced or duplicate event that the fold must refuse.
type gen struct {
	r      *rand.Rand
	log    *logBuilder
	sec    int64
	orgs   []string
	docs   map[string]map[string]domain.Document // the model, by org and id
	order  map[string][]string
	claims map[string][]string // every claim ever made per document
	n      int
}

func newGen(seed uint64) *gen {
	g := &gen{
		r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), log: newLog(),
		orgs: []string{"org_a", "org_b", "org_c"},
		docs: map[string]map[string]domain.Document{}, order: map[string][]string{},
		claims: map[string][]string{},
	}
	for _, o := range g.orgs {
		g.docs[o] = map[string]domain.Document{}
	}
	return g
}

func (g *gen) partition(org string) int32 { return int32(slices.Index(g.orgs, org) % 2) }

// records returns n more records.
func (g *gen) records(n int) []eventstore.Record {
	out := make([]eventstore.Record, 0, n)
	for len(out) < n {
		org := g.orgs[g.r.IntN(len(g.orgs))]
		e := g.event(org)
		if e == nil {
			continue
		}
		g.fold(org, e)
		out = append(out, g.log.record(g.partition(org), e))
	}
	return out
}

func (g *gen) fold(org string, e domain.Event) {
	if bd, ok := e.(*domain.BatchDeleted); ok {
		for id, d := range g.docs[org] {
			if after, err := d.Apply(bd); err == nil {
				g.docs[org][id] = after
			}
		}
		return
	}
	id := domain.DocumentIDOf(e)
	if id == "" {
		return
	}
	if after, err := g.docs[org][id].Apply(e); err == nil {
		g.docs[org][id] = after
	}
}

// pick returns a document of org, preferring one for which ok holds.
func (g *gen) pick(org string, ok func(domain.Document) bool) (domain.Document, bool) {
	ids := g.order[org]
	if len(ids) == 0 {
		return domain.Document{}, false
	}
	if g.r.IntN(10) > 0 {
		var fit []string
		for _, id := range ids {
			if ok(g.docs[org][id]) {
				fit = append(fit, id)
			}
		}
		if len(fit) > 0 {
			return g.docs[org][fit[g.r.IntN(len(fit))]], true
		}
	}
	return g.docs[org][ids[g.r.IntN(len(ids))]], true
}

func (g *gen) claimOf(d domain.Document) string {
	past := g.claims[d.OrgID+"/"+d.ID]
	if len(past) > 0 && g.r.IntN(10) == 0 {
		return past[g.r.IntN(len(past))] // often fenced off
	}
	return d.ClaimID
}

func (g *gen) event(org string) domain.Event {
	g.sec += int64(g.r.IntN(3)) // ties on purpose
	g.n++
	m := meta(org, g.sec)
	batches := []string{"b0", "b1", "b2", "b3"}
	switch k := g.r.IntN(100); {
	case k < 16:
		id := fmt.Sprintf("d%04d", g.n)
		var batch *string
		if g.r.IntN(5) > 0 {
			batch = strp(batches[g.r.IntN(len(batches))])
		}
		g.order[org] = append(g.order[org], id)
		return &domain.DocumentUploaded{Meta: m, DocumentID: id, BatchName: batch, FileName: id + ".pdf", ContentType: "application/pdf", Size: int64(g.r.IntN(1000)), BlobKey: "blob/" + id}
	case k < 36:
		d, ok := g.pick(org, func(d domain.Document) bool { return d.WantsProcessing(true) })
		if !ok {
			return nil
		}
		phase := []string{domain.PhaseFull, domain.PhaseFull, domain.PhaseFull, domain.PhasePreprocess, domain.PhaseExtract}[g.r.IntN(5)]
		q := d.NextQueue(m, phase, nil, g.r.IntN(10) == 0)
		if g.r.IntN(20) == 0 {
			q.Attempt-- // a racing duplicate request
		}
		if g.r.IntN(4) == 0 {
			q.JobIDs = []string{fmt.Sprintf("job_%d", g.n)}
		}
		return q
	case k < 56:
		d, ok := g.pick(org, func(d domain.Document) bool { return d.Status == domain.StatusQueued || d.Status.Running() })
		if !ok {
			return nil
		}
		phase := d.Target
		claim := fmt.Sprintf("c%d", g.n)
		if g.r.IntN(15) == 0 && d.ClaimID != "" {
			claim = d.ClaimID // duplicate delivery of the same claim
		}
		key := d.OrgID + "/" + d.ID
		g.claims[key] = append(g.claims[key], claim)
		return &domain.ProcessingStarted{Meta: m, DocumentID: d.ID, Phase: phase, Attempt: d.Attempt, ClaimID: claim, Worker: "w1"}
	case k < 70:
		d, ok := g.pick(org, func(d domain.Document) bool { return d.Status == domain.StatusPreprocessing })
		if !ok {
			return nil
		}
		return &domain.DocumentPreprocessed{Meta: m, DocumentID: d.ID, ClaimID: g.claimOf(d), ContentType: "application/pdf", Pages: 1 + g.r.IntN(5), TextChars: g.r.IntN(5000)}
	case k < 84:
		d, ok := g.pick(org, func(d domain.Document) bool { return d.Status == domain.StatusExtracting })
		if !ok {
			return nil
		}
		items := make([]domain.LineItem, g.r.IntN(3))
		for i := range items {
			items[i] = domain.LineItem{Description: fmt.Sprintf("item %d", i), Quantity: float64(i + 1), UnitPrice: 2.5, Amount: 2.5 * float64(i+1)}
		}
		var cur *string
		if g.r.IntN(2) == 0 {
			cur = strp("EUR")
		}
		return &domain.DocumentSucceeded{Meta: m, DocumentID: d.ID, ClaimID: g.claimOf(d), Currency: cur, LineItems: items}
	case k < 92:
		d, ok := g.pick(org, func(d domain.Document) bool { return d.Status.Running() })
		if !ok {
			return nil
		}
		return &domain.DocumentFailed{Meta: m, DocumentID: d.ID, ClaimID: g.claimOf(d), Phase: d.Target, Code: "unreadable", Message: "cannot parse", Retryable: g.r.IntN(2) == 0}
	case k < 95:
		d, ok := g.pick(org, func(d domain.Document) bool {
			return d.Status == domain.StatusUploaded || d.Status == domain.StatusQueued
		})
		if !ok {
			return nil
		}
		return &domain.DocumentCanceled{Meta: m, DocumentID: d.ID, Reason: "user"}
	case k < 97:
		return &domain.BatchDeleted{Meta: m, BatchName: batches[g.r.IntN(len(batches))]}
	case k < 98:
		key := fmt.Sprintf("idem%d", g.r.IntN(3))
		switch g.r.IntN(3) {
		case 0:
			return &domain.IdempotencyKeyClaimed{Meta: m, Key: key, RequestHash: "h", ClaimID: fmt.Sprintf("ic%d", g.n)}
		case 1:
			return &domain.IdempotencyKeyCompleted{Meta: m, Key: key, ClaimID: fmt.Sprintf("ic%d", g.n-g.r.IntN(40)), Status: 201, Body: []byte(`{"ok":true}`)}
		}
		return &domain.IdempotencyKeyReleased{Meta: m, Key: key, ClaimID: fmt.Sprintf("ic%d", g.n-g.r.IntN(40))}
	case k < 99:
		return &domain.OrgCreated{Meta: m, Name: org}
	}
	kid := fmt.Sprintf("key_%s_%d", org, g.r.IntN(4))
	if g.r.IntN(2) == 0 {
		return &domain.ApiKeyIssued{Meta: m, KeyID: kid, KeyHash: "hash_" + kid, Label: "ci"}
	}
	return &domain.ApiKeyRevoked{Meta: m, KeyID: kid}
}

// model returns the generator's own fold of every document, as JSON by key.
func (g *gen) model(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, org := range slices.Sorted(maps.Keys(g.docs)) {
		for id, d := range g.docs[org] {
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			out[org+"/"+id] = string(b)
		}
	}
	return out
}
