package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// appendPath appends the given events again, to fresh topics under prefix,
// through the event store (Avro encoding, the store's producer, with the
// node's linger, append rounds and round linger) from conc goroutines that each append one
// event and wait for it: docket's append path on the very records the raw
// producer copies.
func appendPath(ctx context.Context, seeds []string, prefix string, partitions int32, events []domain.Event, conc int, linger, roundLinger time.Duration, rounds int) (rate, error) {
	store, err := eventstore.Open(ctx, seeds, eventstore.Prefix(prefix), eventstore.Partitions(partitions), eventstore.Linger(linger),
		eventstore.AppendRounds(rounds), eventstore.RoundLinger(roundLinger))
	if err != nil {
		return rate{}, err
	}
	defer store.Close()
	start := time.Now()
	err = parallel(conc, len(events), func(i int) error {
		_, err := store.Append(ctx, events[i])
		return err
	})
	return newRate(len(events), 0, time.Since(start)), err
}

// decodeAll decodes raw event records as a reader would.
func decodeAll(codec *eventstore.Codec, recs []*kgo.Record) ([]eventstore.Record, []domain.Event) {
	out := make([]eventstore.Record, 0, len(recs))
	var events []domain.Event
	for _, r := range recs {
		ev, err := codec.Decode(r.Value)
		// With its Value, as the event store's reader returns it: without
		// it the history index encodes every event again, which the
		// views' real path never does (until 2026-12-05 the apply path
		// paid that: 15 % of its CPU).
		out = append(out, eventstore.Record{Position: eventstore.Position{Partition: r.Partition, Offset: r.Offset}, Timestamp: r.Timestamp, Event: ev, Err: err, Value: r.Value})
		if err == nil {
			events = append(events, ev)
		}
	}
	return out, events
}

// decodePath measures Avro decoding alone, of the same records in memory:
// what any consumer that folds the log pays before it folds anything, and
// the raw consume ceiling does not.
func decodePath(clock cpuClock, codec *eventstore.Codec, recs []*kgo.Record) rate {
	sw := clock.start()
	for _, r := range recs {
		_, _ = codec.Decode(r.Value)
	}
	return sw.rate(len(recs), 0)
}

// foldPath folds decoded events into documents and batch summaries held in
// maps, with the domain's own folds (Document.Apply, Batch.Track): no
// storage, no history, no notifications, no jobs. Every design that
// keeps these views does at least this per event, so it is the fold's
// part of the CPU floor (bench_floor.go). An event the fold refuses
// leaves its document as it was, as the views' no-op does; folded counts
// the document events it took.
func foldPath(clock cpuClock, events []domain.Event) (r rate, folded int) {
	docs := map[string]domain.Document{}
	batches := map[string]domain.Batch{}
	sw := clock.start()
	for _, ev := range events {
		id := domain.DocumentIDOf(ev)
		if id == "" {
			continue
		}
		before := docs[id]
		after, err := before.Apply(ev)
		if err != nil {
			continue
		}
		docs[id] = after
		folded++
		org := ev.Header().OrgID
		key := org + "/" + after.BatchName
		batch, ok := batches[key]
		if !ok {
			batch = domain.NewBatch(org, after.BatchName)
		}
		batches[key], _ = batch.Track(before, after)
	}
	return sw.rate(len(events), 0), folded
}

// applyPath measures the projections' apply path alone: Avro decode, fold,
// one Pebble batch per fetch-sized chunk (4096 records, as Views.Run polls),
// into fresh views, without the network. As in Views.Run, a goroutine
// decodes one chunk ahead of the fold (until 2026-12-05 the bench decoded
// each chunk before folding it, in one goroutine, which a live node does
// not do).
func applyPath(clock cpuClock, codec *eventstore.Codec, recs []*kgo.Record, dir string, opts ...projections.Option) (rate, error) {
	v, err := projections.Open(dir, opts...)
	if err != nil {
		return rate{}, err
	}
	defer v.Close()
	sw := clock.start()
	chunks := make(chan []eventstore.Record, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(chunks)
		for i := 0; i < len(recs); i += 4096 {
			chunk, _ := decodeAll(codec, recs[i:min(i+4096, len(recs))])
			select {
			case chunks <- chunk:
			case <-stop:
				return
			}
		}
	}()
	// As Run applies a backlog: each chunk folds while the one before it
	// commits (projections.Pipeline).
	p := v.Pipeline()
	for chunk := range chunks {
		if err := p.Apply(chunk); err != nil {
			return rate{}, err
		}
	}
	if err := p.Flush(); err != nil {
		return rate{}, err
	}
	r := sw.rate(len(recs), 0)
	r.Views = wroteBy(v.DB())
	return r, nil
}

// coldReplay rebuilds the views cold: a new reader from offset 0 into an empty
// Pebble directory, up to end (projections.Rebuild, as a node with an empty
// data dir does). With keep, it returns the rebuilt views' keys and values
// too, for the Pebble ceiling.
func coldReplay(ctx context.Context, clock cpuClock, store *eventstore.Store, dir string, end map[int32]int64, keep bool, opts ...projections.Option) (rate, [][2][]byte, error) {
	sw := clock.start()
	v, err := projections.Rebuild(ctx, store, dir, end, opts...)
	if err != nil {
		return rate{}, nil, err
	}
	defer v.Close()
	r := sw.rate(int(sumEnds(end)), 0)
	r.Views = wroteBy(v.DB())
	if !keep {
		return r, nil, nil
	}
	it, err := v.DB().NewIter(&pebble.IterOptions{})
	if err != nil {
		return r, nil, err
	}
	defer it.Close()
	var kvs [][2][]byte
	for ok := it.First(); ok; ok = it.Next() {
		kvs = append(kvs, [2][]byte{append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)})
	}
	return r, kvs, nil
}

// rawPebble writes kvs into a fresh Pebble directory in batches of 4096
// keys without fsync (as the views commit): the Pebble ceiling for the
// keys and value sizes the views hold. Its CPU counts Pebble's flushes
// and compactions only while the batches are written: what they owe at
// the end is left out, so the figure errs low.
func rawPebble(clock cpuClock, kvs [][2][]byte, dir string) (rate, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		return rate{}, err
	}
	defer db.Close()
	var bytes int64
	sw := clock.start()
	for i := 0; i < len(kvs); i += 4096 {
		b := db.NewBatch()
		for _, kv := range kvs[i:min(i+4096, len(kvs))] {
			bytes += int64(len(kv[0]) + len(kv[1]))
			if err := b.Set(kv[0], kv[1], nil); err != nil {
				return rate{}, err
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return rate{}, err
		}
		b.Close()
	}
	return sw.rate(len(kvs), bytes), nil
}

// rawIngest writes kvs, which are in key order and each key once (as the
// replay's iterator returned them), into one sstable of its own and
// ingests it into a fresh Pebble: no WAL, no memtable, no flush, the
// cheapest way Pebble takes keys, open to a rebuild that sorts what it
// writes. The file is synced, as Pebble's ingestion requires.
func rawIngest(clock cpuClock, kvs [][2][]byte, dir string) (rate, error) {
	opts := &pebble.Options{Logger: quietPebble{}}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return rate{}, err
	}
	defer db.Close()
	opts.EnsureDefaults()
	path := dir + ".sst"
	defer os.Remove(path)
	var bytes int64
	sw := clock.start()
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return rate{}, err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), opts.MakeWriterOptions(0, db.TableFormat()))
	for _, kv := range kvs {
		bytes += int64(len(kv[0]) + len(kv[1]))
		if err := w.Set(kv[0], kv[1]); err != nil {
			w.Close()
			return rate{}, err
		}
	}
	if err := w.Close(); err != nil {
		return rate{}, err
	}
	if err := db.Ingest(context.Background(), []string{path}); err != nil {
		return rate{}, err
	}
	return sw.rate(len(kvs), bytes), nil
}

// quietPebble drops Pebble's informational lines.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)         {}
func (quietPebble) Errorf(f string, args ...any) { fmt.Fprintf(os.Stderr, "pebble: "+f+"\n", args...) }
func (quietPebble) Fatalf(f string, args ...any) { panic(fmt.Sprintf("pebble: "+f, args...)) }
