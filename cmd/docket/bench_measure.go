package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// measureCeilings runs the raw and replay measurements on the same broker
// and disk, after the lifecycle runs, on the records they wrote.
func (e *benchEnv) measureCeilings(ctx context.Context, f benchFlags, rep *benchReport) error {
	st := e.n.store
	seeds, parts := st.Seeds(), st.Partitions()
	end, err := st.EndOffsets(ctx)
	if err != nil {
		return err
	}
	c := &ceilings{}
	clock := cpuClock{brokerPIDs: f.pids}
	stopProfile, err := startCPUProfile(f.ceilProf)
	if err != nil {
		return err
	}
	// Raw consume, replay and the apply path, in rounds: on a shared VM a
	// measurement of a second or two is often slowed by something else,
	// never sped up, so each figure is the best of its rounds, the ceiling
	// as much as docket's own (BENCHMARKS.md, method).
	var recs []*kgo.Record
	var events []domain.Event
	rounds := max(f.ceilingRounds, 1)
	viewOpts := (&Config{ViewsWithoutWAL: f.viewsWithoutWAL}).viewsWAL() // the node's
	for round := range rounds {
		got, consumed, err := rawConsume(ctx, clock, seeds, st.EventsTopic(), end, max(f.applyRecords, f.ceilingRecords))
		if err != nil {
			return err
		}
		recs = got
		// The apply path folds what raw consume read, up to
		// --apply-records: until 2026-12-07 it folded only the first
		// --ceiling-records (50,000), into views a fraction of the size,
		// which cost less CPU a record than the whole log (BENCHMARKS.md,
		// "The apply path over the whole log").
		applied := recs[:min(len(recs), f.applyRecords)]
		// The apply path before the replay, and the replay's keys and
		// values (a copy of the rebuilt views, hundreds of thousands of
		// small slices) kept only in the last round, after its apply:
		// until 2026-12-07 every apply ran with them live, and the
		// collector scanned them on the apply path's CPU, which no node
		// does.
		apply, err := applyPath(clock, st.Codec(), applied, filepath.Join(e.dir, fmt.Sprintf("apply-%d", round)), viewOpts...)
		if err != nil {
			return err
		}
		replay, kvs, err := coldReplay(ctx, clock, st, filepath.Join(e.dir, fmt.Sprintf("replay-%d", round)), end, round == rounds-1, viewOpts...)
		if err != nil {
			return err
		}
		decode := decodePath(clock, st.Codec(), applied)
		_, events = decodeAll(st.Codec(), applied)
		fold, folded := foldPath(clock, events)
		c.FoldedEvents = folded
		c.Rounds = append(c.Rounds, consumeRound{RawConsume: consumed, Replay: replay, ApplyPath: apply, Decode: decode, Fold: fold})
		c.RawConsume, c.Replay, c.ApplyPath = faster(c.RawConsume, consumed), faster(c.Replay, replay), faster(c.ApplyPath, apply)
		c.Decode, c.Fold = faster(c.Decode, decode), faster(c.Fold, fold)
		if kvs != nil {
			c.kvs = kvs
		}
	}
	stopProfile()
	// The produce side writes the first --ceiling-records of them again.
	recs = recs[:min(len(recs), f.ceilingRecords)]
	_, events = decodeAll(st.Codec(), recs)
	// Pebble's two ways in, with and without the history's copies, in
	// rounds too: each lasts a fraction of a second.
	noCopies := withoutCopies(c.kvs)
	for round := range max(f.ceilingRounds, 1) {
		for _, m := range []struct {
			best  *rate
			write func(cpuClock, [][2][]byte, string) (rate, error)
			kvs   [][2][]byte
			name  string
		}{{&c.RawPebble, rawPebble, c.kvs, "pebble"}, {&c.RawPebbleNoCopies, rawPebble, noCopies, "pebble-no-copies"},
			{&c.RawIngest, rawIngest, c.kvs, "ingest"}, {&c.RawIngestNoCopies, rawIngest, noCopies, "ingest-no-copies"}} {
			r, err := m.write(clock, m.kvs, filepath.Join(e.dir, fmt.Sprintf("%s-%d", m.name, round)))
			if err != nil {
				return err
			}
			*m.best = faster(*m.best, r)
		}
	}
	c.ViewKeys = len(c.kvs)
	c.Floor = newFloor(c, runtime.NumCPU())
	id := eventstore.NewID("")
	// The replay and the Pebble ceiling leave dirty pages behind; with the
	// embedded broker every produce fsyncs, and the first writer after
	// them would pay for their write-back. Each produce ceiling starts
	// from a clean page cache.
	//
	// The produce side in rounds too, for the same reason: one run of
	// raw produce+consume measured 24,250 records/s and the next, on the
	// same broker, 41,850.
	for round := range max(f.ceilingRounds, 1) {
		var pr produceRound
		syncDisks()
		if pr.RawProduce, _, err = rawProduce(ctx, seeds, fmt.Sprintf("bench-raw-%s-%d", id, round), parts, recs, f.conc, false); err != nil {
			return err
		}
		syncDisks()
		if _, pr.RawProduceConsume, err = rawProduce(ctx, seeds, fmt.Sprintf("bench-rawpc-%s-%d", id, round), parts, recs, f.conc, true); err != nil {
			return err
		}
		syncDisks()
		if pr.AppendPath, err = appendPath(ctx, seeds, fmt.Sprintf("bench-append-%s-%d", id, round), parts, events, f.conc, f.linger, f.roundLinger, (&Config{AppendRounds: f.rounds}).appendRounds()); err != nil {
			return err
		}
		c.ProduceRounds = append(c.ProduceRounds, pr)
		c.RawProduce, c.RawProduceConsume = faster(c.RawProduce, pr.RawProduce), faster(c.RawProduceConsume, pr.RawProduceConsume)
		c.AppendPath = faster(c.AppendPath, pr.AppendPath)
	}
	// Would a linger pay? The same produce with 5 ms of it.
	syncDisks()
	if c.RawProduceLinger, _, err = rawProduce(ctx, seeds, "bench-linger-"+id, parts, recs, f.conc, false, kgo.ProducerLinger(5*time.Millisecond)); err != nil {
		return err
	}
	if rep.Half != nil && rep.Half.RecordsPerSec > 0 {
		trip, err := rawLatency(ctx, seeds, "bench-lat-"+id, parts, recs, rep.Half.RecordsPerSec, min(f.duration, 20*time.Second))
		if err != nil {
			return err
		}
		lat := trip.summary(fmt.Sprintf("raw produce -> consume at %.0f records/s", rep.Half.RecordsPerSec))
		c.RawLatency = &lat
		// On the disk the uploads go to, at half of peak's upload rate.
		syncDisks()
		sync, err := probeSync(e.blobs, rep.Half.DocsPerSec, min(f.duration, 20*time.Second))
		if err != nil {
			return err
		}
		c.LifecycleFloor = newLatencyFloor(trip, sync)
	}
	c.kvs = nil
	rep.Ceilings = c
	return nil
}

// withoutCopies is kvs but the history's copies of the events (he/, in
// projections/keys.go's layout): the views a history kept as positions in
// the log would write.
func withoutCopies(kvs [][2][]byte) [][2][]byte {
	out := make([][2][]byte, 0, len(kvs))
	for _, kv := range kvs {
		if !bytes.HasPrefix(kv[0], []byte("he/")) {
			out = append(out, kv)
		}
	}
	return out
}

// faster is the better of two measurements of the same thing.
func faster(a, b rate) rate {
	if b.PerSec > a.PerSec {
		return b
	}
	return a
}
