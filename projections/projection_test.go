package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// applyChunks applies recs as consecutive fetches of the given sizes.
func applyChunks(f *fixture, recs []eventstore.Record, sizes func(left int) int) {
	f.t.Helper()
	for len(recs) > 0 {
		n := min(max(sizes(len(recs)), 1), len(recs))
		f.apply(recs[:n]...)
		recs = recs[n:]
	}
}

// reference applies recs in one fetch to fresh views.
func reference(t *testing.T, recs []eventstore.Record) *fixture {
	t.Helper()
	f := setup(t)
	f.apply(recs...)
	return f
}

func wantOffsets(t *testing.T, what string, got, want map[int32]int64) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s: offsets %v, want %v", what, got, want)
	}
}

// TestExactlyOnce: a fetch applied twice, and fetches that overlap what is
// already applied, change nothing beyond what applying each record once does.
func TestExactlyOnce(t *testing.T) {
	t.Parallel()
	recs := newGen(1).records(400)
	ref := reference(t, recs)
	want := dump(t, ref.v)
	end := ref.v.Offsets()

	t.Run("same fetch twice", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.apply(recs...)
		noops := f.v.Noops()
		f.apply(recs...)
		sameDB(t, "twice", dump(t, f.v), want)
		wantOffsets(t, "twice", f.v.Offsets(), end)
		if f.v.Noops() != noops || noops != ref.v.Noops() {
			t.Errorf("noops %d after re-delivery, %d before, want %d", f.v.Noops(), noops, ref.v.Noops())
		}
	})
	t.Run("overlapping fetches", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for _, w := range [][2]int{{0, 50}, {30, 120}, {0, 10}, {100, 260}, {259, 261}, {200, 400}, {0, 400}, {399, 400}} {
			f.apply(recs[w[0]:w[1]]...)
		}
		sameDB(t, "overlapping", dump(t, f.v), want)
		wantOffsets(t, "overlapping", f.v.Offsets(), end)
		if f.v.Noops() != ref.v.Noops() {
			t.Errorf("noops %d, want %d", f.v.Noops(), ref.v.Noops())
		}
	})
	t.Run("one record at a time, each twice", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for i := range recs {
			f.apply(recs[i])
			f.apply(recs[max(0, i-3) : i+1]...)
		}
		sameDB(t, "stutter", dump(t, f.v), want)
		wantOffsets(t, "stutter", f.v.Offsets(), end)
	})
	t.Run("stale fetch only", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.apply(recs...)
		before := dump(t, f.v)
		for i := 0; i < len(recs); i += 37 {
			f.apply(recs[i])
		}
		sameDB(t, "stale", dump(t, f.v), before)
	})
}

// TestDeterministicAcrossFetchSplits: invariant 4. Views fed the same log in
// different fetch splits, and with the two partitions progressing at
// different rates, are byte-identical.
func TestDeterministicAcrossFetchSplits(t *testing.T) {
	t.Parallel()
	recs := newGen(2).records(1500)
	want := dump(t, reference(t, recs).v)
	if len(want) < 100 {
		t.Fatalf("only %d keys: generator too weak", len(want))
	}

	byPartition := func(p int32) []eventstore.Record {
		var out []eventstore.Record
		for _, r := range recs {
			if r.Partition == p {
				out = append(out, r)
			}
		}
		return out
	}
	splits := map[string]func(f *fixture){
		"one per fetch": func(f *fixture) { applyChunks(f, recs, func(int) int { return 1 }) },
		// A restart loads the key filter from the stored keys; one that
		// missed a key would fold later events as if it did not exist.
		"restarted every 300": func(f *fixture) {
			for i := 0; i < len(recs); i += 300 {
				f.apply(recs[i:min(i+300, len(recs))]...)
				f.restart()
			}
		},
		"random chunks": func(f *fixture) {
			r := rand.New(rand.NewPCG(7, 7))
			applyChunks(f, recs, func(int) int { return 1 + r.IntN(64) })
		},
		"partition 1 first": func(f *fixture) {
			f.apply(byPartition(1)...)
			applyChunks(f, byPartition(0), func(int) int { return 100 })
		},
		"partitions interleaved in random chunks": func(f *fixture) {
			r := rand.New(rand.NewPCG(8, 8))
			p0, p1 := byPartition(0), byPartition(1)
			for len(p0)+len(p1) > 0 {
				var fetch []eventstore.Record
				n0, n1 := min(len(p0), r.IntN(20)), min(len(p1), r.IntN(20))
				fetch = append(append(fetch, p1[:n1]...), p0[:n0]...)
				p0, p1 = p0[n0:], p1[n1:]
				f.apply(fetch...)
			}
		},
	}
	for name, apply := range splits {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			apply(f)
			sameDB(t, name, dump(t, f.v), want)
		})
	}
	// The decoded-view cache must not change a byte: turned off, and so
	// small that its generations roll over within every fetch.
	small := projections.WithCacheEntries(3)
	caches := map[string][]projections.Option{
		"cache off": {projections.WithCacheEntries(0)}, "cache of 3": {small},
		// Reads of keys never written skip Pebble (the key filter),
		// unless it is off or has filled and stopped answering.
		"key filter off": {small, projections.WithKeyFilterLimit(0)}, "key filter full": {small, projections.WithKeyFilterLimit(50)},
	}
	for name, opts := range caches {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, opts...)
			r := rand.New(rand.NewPCG(9, 9))
			applyChunks(f, recs, func(int) int { return 1 + r.IntN(64) })
			sameDB(t, name, dump(t, f.v), want)
		})
	}
	// Records read from Kafka carry their bytes, which the history index
	// stores instead of encoding the event again.
	t.Run("records carry their bytes", func(t *testing.T) {
		t.Parallel()
		codec, err := eventstore.NewCodec()
		if err != nil {
			t.Fatal(err)
		}
		withBytes := slices.Clone(recs)
		for i := range withBytes {
			if withBytes[i].Value, err = codec.Encode(withBytes[i].Event); err != nil {
				t.Fatal(err)
			}
		}
		f := setup(t)
		applyChunks(f, withBytes, func(int) int { return 100 })
		sameDB(t, "records with bytes", dump(t, f.v), want)
	})
}

// TestCloseKeepsViewsWithoutWAL: without a WAL, Pebble's Close would drop
// the memtables; the views' Close flushes them first, so views closed and
// opened again hold what they had applied and apply nothing twice.
func TestCloseKeepsViewsWithoutWAL(t *testing.T) {
	t.Parallel()
	recs := newGen(5).records(400)
	f := setup(t, projections.WithoutWAL())
	applyChunks(f, recs, func(int) int { return 40 })
	before := f.v.Offsets()
	snapshot := dump(t, f.v)
	f.restart()
	wantOffsets(t, "after a clean restart without a WAL", f.v.Offsets(), before)
	sameDB(t, "after a clean restart without a WAL", dump(t, f.v), snapshot)
}

// TestRestart: offsets are restored from the directory, a re-delivered
// prefix is skipped after the restart, and the log continues correctly.
func TestRestart(t *testing.T) {
	t.Parallel()
	recs := newGen(3).records(600)
	ref := reference(t, recs)

	f := setup(t)
	applyChunks(f, recs[:350], func(int) int { return 50 })
	before := f.v.Offsets()
	snapshot := dump(t, f.v)
	f.restart()
	wantOffsets(t, "after restart", f.v.Offsets(), before)
	sameDB(t, "after restart", dump(t, f.v), snapshot)
	if f.v.Noops() != 0 {
		t.Errorf("noops %d after restart, want 0 (counted since start)", f.v.Noops())
	}

	f.apply(recs[300:450]...) // overlaps the applied prefix
	f.restart()
	f.apply(recs...) // everything again: only the tail is new
	sameDB(t, "continued", dump(t, f.v), dump(t, ref.v))
	wantOffsets(t, "continued", f.v.Offsets(), ref.v.Offsets())

	// Offsets are exactly one past the last record of each partition.
	last := map[int32]int64{}
	for _, r := range recs {
		last[r.Partition] = r.Offset + 1
	}
	wantOffsets(t, "end", f.v.Offsets(), last)
	lag := f.v.Lag(map[int32]int64{0: last[0] + 5, 1: last[1], 2: 3})
	wantOffsets(t, "lag", lag, map[int32]int64{0: 5, 1: 0, 2: 3})
}

// TestWaitFor: the barrier returns exactly once the record is applied, and
// ErrNotCaughtUp (wrapping the context's error) when the context ends first.
func TestWaitFor(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l := newLog()
	up := func(doc string, sec int64) eventstore.Record {
		return l.record(0, &domain.DocumentUploaded{Meta: meta("o1", sec), DocumentID: doc, BatchName: strp("b1")})
	}
	r0, r1, r2 := up("d0", 1), up("d1", 2), up("d2", 3)
	target := r2.Position

	type result struct {
		err     error
		applied int64 // partition 0's applied offset when WaitFor returned
	}
	wait := func(ctx context.Context, pos eventstore.Position) <-chan result {
		ch := make(chan result, 1)
		go func() {
			err := f.v.WaitFor(ctx, pos)
			ch <- result{err, f.v.Offsets()[pos.Partition]}
		}()
		return ch
	}

	canceledCtx, cancel := context.WithCancel(t.Context())
	early := wait(canceledCtx, target)
	patient := wait(t.Context(), target)
	other := wait(t.Context(), eventstore.Position{Partition: 1, Offset: 0})

	f.apply(r0)
	f.apply(r1)
	select {
	case res := <-patient:
		t.Fatalf("WaitFor(%v) returned %v with offset %d applied", target, res.err, res.applied)
	default:
	}
	// Cancel before offset 2 is applied: if the waiter had (wrongly) been
	// released by offsets 0 or 1 it would have returned nil.
	cancel()
	if res := <-early; !errors.Is(res.err, projections.ErrNotCaughtUp) || !errors.Is(res.err, context.Canceled) {
		t.Errorf("canceled wait: %v, want ErrNotCaughtUp wrapping context.Canceled", res.err)
	}

	f.apply(r2)
	res := <-patient
	if res.err != nil {
		t.Fatalf("WaitFor after apply: %v", res.err)
	}
	if res.applied <= target.Offset {
		t.Errorf("WaitFor returned with offset %d applied, before %d", res.applied, target.Offset)
	}
	if _, err := f.v.Document("o1", "d2"); err != nil {
		t.Errorf("read after WaitFor: %v (read-your-writes)", err)
	}

	// Applying partition 0 never releases a wait on partition 1.
	select {
	case res := <-other:
		t.Fatalf("wait on partition 1 returned %v after partition 0 applied", res.err)
	default:
	}
	f.apply(l.record(1, &domain.OrgCreated{Meta: meta("o2", 4), Name: "o2"}))
	if res := <-other; res.err != nil {
		t.Errorf("wait on partition 1: %v", res.err)
	}

	// An applied position returns nil even with a context already done; an
	// unapplied one returns ErrNotCaughtUp wrapping DeadlineExceeded.
	expired, cancel2 := context.WithDeadline(t.Context(), epoch)
	defer cancel2()
	if err := f.v.WaitFor(expired, r1.Position); err != nil {
		t.Errorf("WaitFor(applied, expired ctx) = %v, want nil", err)
	}
	err := f.v.WaitFor(expired, eventstore.Position{Partition: 0, Offset: 3})
	if !errors.Is(err, projections.ErrNotCaughtUp) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor(unapplied, expired ctx) = %v, want ErrNotCaughtUp wrapping DeadlineExceeded", err)
	}
	if err := f.v.WaitAll(expired, []eventstore.Position{r0.Position, {Partition: 1, Offset: 0}}); err != nil {
		t.Errorf("WaitAll(applied) = %v", err)
	}
	if err := f.v.WaitAll(expired, []eventstore.Position{r0.Position, {Partition: 7, Offset: 0}}); !errors.Is(err, projections.ErrNotCaughtUp) {
		t.Errorf("WaitAll(unapplied) = %v, want ErrNotCaughtUp", err)
	}
}

// TestTrackMatchesSummarize: the incrementally tracked batch views equal
// domain.Summarize over their documents, and every document view equals the
// generator's own fold, at checkpoints along a long random log.
func TestTrackMatchesSummarize(t *testing.T) {
	t.Parallel()
	g := newGen(4)
	f := setup(t)
	batches, docs := 0, 0
	for round := range 12 {
		r := rand.New(rand.NewPCG(uint64(round), 4))
		applyChunks(f, g.records(500), func(int) int { return 1 + r.IntN(100) })
		for _, org := range g.orgs {
			bs, next, err := f.v.Batches(org, "", 1000)
			if err != nil || next != "" {
				t.Fatalf("Batches(%s): next=%q err=%v", org, next, err)
			}
			for _, b := range bs {
				var all []domain.Document
				cursor := ""
				for {
					page, next, err := f.v.BatchDocuments(org, b.Name, cursor, 7)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, page...)
					if next == "" {
						break
					}
					cursor = next
				}
				if len(all) != b.Documents {
					t.Errorf("round %d %s/%s: %d documents listed, batch counts %d", round, org, b.Name, len(all), b.Documents)
				}
				seen := map[string]bool{}
				for _, d := range all {
					if seen[d.ID] || d.BatchName != b.Name || d.BatchDeleted {
						t.Errorf("round %d %s/%s: listed %s (batch %q deleted %t, seen %t)", round, org, b.Name, d.ID, d.BatchName, d.BatchDeleted, seen[d.ID])
					}
					seen[d.ID] = true
				}
				got, _ := json.Marshal(b)
				want, _ := json.Marshal(domain.Summarize(org, b.Name, all))
				if string(got) != string(want) {
					t.Errorf("round %d %s/%s:\n tracked   %s\n summarize %s", round, org, b.Name, got, want)
				}
				if b.Status() != domain.Summarize(org, b.Name, all).Status() {
					t.Errorf("round %d %s/%s: status differs", round, org, b.Name)
				}
				batches++
			}
		}
		model := g.model(t)
		for _, key := range slices.Sorted(maps.Keys(model)) {
			org, id, _ := cutKey(key)
			d, err := f.v.Document(org, id)
			if err != nil {
				t.Fatalf("Document(%s): %v", key, err)
			}
			got, _ := json.Marshal(d)
			if string(got) != model[key] {
				t.Errorf("round %d document %s:\n view  %s\n model %s", round, key, got, model[key])
			}
			docs++
		}
	}
	if f.v.Noops() == 0 {
		t.Error("no refused events: the generator does not exercise no-ops")
	}
	t.Logf("checked %d batch views and %d document views; %d no-ops", batches, docs, f.v.Noops())
}

func cutKey(k string) (org, id string, ok bool) {
	i := len(k) - 1
	for i >= 0 && k[i] != '/' {
		i--
	}
	return k[:max(i, 0)], k[i+1:], i >= 0
}
