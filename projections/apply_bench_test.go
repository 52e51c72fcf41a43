package projections_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// BenchmarkApplyLifecycle applies fetch-sized batches (4096 records, as
// Views.Run polls) of whole document lifecycles — upload into a batch of
// its own, queue, claim, preprocessed, succeed with two line items — the
// steps of the log `docket bench` writes (not its partitions, ids or
// order: oneOrgLog). It reports events applied per second.
func BenchmarkApplyLifecycle(b *testing.B) {
	f, l := setup(b), newLog()
	var lc lifecycles
	events := 0
	for b.Loop() {
		recs := make([]eventstore.Record, 0, 4096)
		for range 819 {
			recs = lc.next(l, recs)
		}
		events += applyFetch(b, f.v, recs)
	}
	reportApplied(b, f.v, events)
}

// BenchmarkApplySteady applies the same lifecycles in fetches of three to
// five records, one step each of as many documents in flight, as a live
// node polls under a steady load (at half of peak in `docket bench`, a
// fetch of a few records every millisecond or two): what every fetch pays
// however small it is (its batch, its commit, the counts it rewrites)
// dominates.
func BenchmarkApplySteady(b *testing.B) {
	f, l := setup(b), newLog()
	var lc lifecycles
	var inFlight [][]domain.Event
	events := 0
	for i := 0; b.Loop(); i++ {
		n := 3 + i%3
		for len(inFlight) < n {
			inFlight = append(inFlight, lc.events())
		}
		fetch := make([]eventstore.Record, 0, n)
		for j := range n {
			fetch = append(fetch, l.record(0, inFlight[j][0]))
			inFlight[j] = inFlight[j][1:]
		}
		inFlight = slices.DeleteFunc(inFlight, func(evs []domain.Event) bool { return len(evs) == 0 })
		events += applyFetch(b, f.v, fetch)
	}
	reportApplied(b, f.v, events)
}

// BenchmarkApplyBenchLog applies the steps of the log `docket bench`
// writes (not its partitions, ids or order: oneOrgLog), in fetch-sized
// batches: each document's lifecycle in a batch of its own
// with a webhook, and one fetch later the delivery of the batch's
// batch.completed notification. Its records carry their encoded values, as
// the reader hands them out, so the history index stores those bytes and
// does not encode the event again (as it must for BenchmarkApplyLifecycle's
// records, made in memory); encoding them is not timed.
func BenchmarkApplyBenchLog(b *testing.B) {
	f := setup(b)
	bl := newBenchLog(b)
	events := 0
	for b.Loop() {
		b.StopTimer()
		recs := bl.fetch(b, f.v)
		b.StartTimer()
		events += applyFetch(b, f.v, recs)
	}
	reportApplied(b, f.v, events)
}

// BenchmarkApplyJobRuns applies fetch-sized batches of lifecycles run by
// extraction jobs: eight documents are uploaded, a job is created over
// them, and each runs with the job named. It measures what the job
// projection adds to the fold.
func BenchmarkApplyJobRuns(b *testing.B) {
	f, l := setup(b), newLog()
	var lc lifecycles
	jobs, events := 0, 0
	for b.Loop() {
		recs := make([]eventstore.Record, 0, 4096)
		for len(recs) < 4096-42 {
			jobs++
			job := fmt.Sprintf("job_%d", jobs)
			runs := make([][]domain.Event, 8)
			created := &domain.JobCreated{Meta: meta("o1", 2), JobID: job, Kind: domain.JobExtraction}
			for i := range runs {
				runs[i] = lc.events()
				recs = append(recs, l.record(0, runs[i][0]))
				created.DocumentIDs = append(created.DocumentIDs, runs[i][0].(*domain.DocumentUploaded).DocumentID)
				runs[i][1].(*domain.DocumentQueued).JobIDs = []string{job}
			}
			recs = append(recs, l.record(0, created))
			for _, run := range runs {
				for _, e := range run[1:] {
					recs = append(recs, l.record(0, e))
				}
			}
		}
		events += applyFetch(b, f.v, recs)
	}
	reportApplied(b, f.v, events)
	if j, err := f.v.Job("o1", fmt.Sprintf("job_%d", jobs)); err != nil || j.Progress().Done != 8 {
		b.Fatalf("the last job: %+v, %v", j.Progress(), err)
	}
}

// BenchmarkApplyPipelined applies the same 24 fetches of the bench's log
// (BenchmarkApplyBenchLog) into new views, each fetch committed before the
// next folds (sync, ApplyRecords) or while it folds (pipelined, Pipeline,
// as Run does when the next fetch is waiting): what folding and committing
// side by side gains on two cores. oneorg applies, pipelined, 24 fetches
// of the log as `docket bench` really writes it (oneOrgLog). The fetches
// are made first, untimed.
func BenchmarkApplyPipelined(b *testing.B) {
	bl, oneOrg := newBenchLog(b), newOneOrgLog(b)
	logs := map[string][][]eventstore.Record{
		"sync": fetches(b, 24, bl.fetch), "oneorg": fetches(b, 24, oneOrg.fetch),
	}
	logs["pipelined"] = logs["sync"]
	for _, mode := range []string{"sync", "pipelined", "oneorg"} {
		fetches, events := logs[mode], 0
		for _, f := range fetches {
			events += len(f)
		}
		b.Run(mode, func(b *testing.B) {
			applied := 0
			for b.Loop() {
				b.StopTimer()
				v, err := projections.Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				p := v.Pipeline()
				for _, recs := range fetches {
					if mode == "sync" {
						err = v.ApplyRecords(recs)
					} else {
						err = p.Apply(recs)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := p.Flush(); err != nil {
					b.Fatal(err)
				}
				applied += events
				b.StopTimer()
				if v.Noops() != 0 {
					b.Fatalf("%d events refused: the benchmark's log is wrong", v.Noops())
				}
				if err := v.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(applied)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// fetches makes n fetches with fetch, each applied to views of their own
// first: a fetch may name what the ones before it made (notifications).
func fetches(b *testing.B, n int, fetch func(testing.TB, *projections.Views) []eventstore.Record) [][]eventstore.Record {
	shadow := setup(b)
	var out [][]eventstore.Record
	for range n {
		recs := fetch(b, shadow.v)
		applyFetch(b, shadow.v, recs)
		out = append(out, recs)
	}
	return out
}

// applyFetch applies one fetch and returns how many events it held.
func applyFetch(b *testing.B, v *projections.Views, recs []eventstore.Record) int {
	if err := v.ApplyRecords(recs); err != nil {
		b.Fatal(err)
	}
	return len(recs)
}

// reportApplied reports events/s, and fails the benchmark if the views
// refused any of its events: a benchmark of a wrong log measures nothing.
func reportApplied(b *testing.B, v *projections.Views, events int) {
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	if v.Noops() != 0 {
		b.Fatalf("%d events refused: the benchmark's log is wrong", v.Noops())
	}
}

// benchLog makes the fetches of BenchmarkApplyBenchLog.
type benchLog struct {
	l     *logBuilder
	codec *eventstore.Codec
	lc    lifecycles
	done  []string // batches completed by the last fetch
}

func newBenchLog(tb testing.TB) *benchLog {
	codec, err := eventstore.NewCodec()
	if err != nil {
		tb.Fatal(err)
	}
	return &benchLog{l: newLog(), codec: codec}
}

// fetch returns the next 4,096 or so records: the deliveries of the
// batches the last fetch completed (whose notifications it reads from v),
// then whole lifecycles.
func (bl *benchLog) fetch(tb testing.TB, v *projections.Views) []eventstore.Record {
	recs := make([]eventstore.Record, 0, 4096)
	for _, batch := range bl.done {
		ns, err := v.BatchNotifications("o1", batch)
		if err != nil || len(ns) != 1 {
			tb.Fatalf("batch %s: %d notifications, %v", batch, len(ns), err)
		}
		recs = append(recs, bl.l.record(int32(len(recs)%12), &domain.WebhookDeliveryAttempted{Meta: meta("o1", 6), NotificationID: ns[0].ID,
			Attempt: 1, HTTPStatus: 200, LatencyMillis: 2, Outcome: domain.DeliveryDelivered}))
	}
	bl.done = bl.done[:0]
	for len(recs) < 4096-7 {
		evs := bl.lc.events()
		batch := *evs[0].(*domain.DocumentUploaded).BatchName
		hook := &domain.BatchWebhookSet{Meta: meta("o1", 1), BatchName: batch, URL: "http://127.0.0.1:9/hook", Secret: "whsec_bench"}
		evs = slices.Insert(evs, 1, domain.Event(hook))
		p := int32(bl.lc.doc % 12)
		for _, e := range evs {
			recs = append(recs, bl.l.record(p, e))
		}
		bl.done = append(bl.done, batch)
	}
	for i := range recs {
		var err error
		if recs[i].Value, err = bl.codec.Encode(recs[i].Event); err != nil {
			tb.Fatal(err)
		}
	}
	return recs
}

// lifecycles makes whole document lifecycles — upload into a batch of its
// own, queue, claim, preprocessed, succeed with two line items — the steps
// of the log `docket bench` writes, in twelve partitions.
type lifecycles struct{ doc int }

// next appends the records of one document's lifecycle to recs, in a
// partition of its own choosing.
func (c *lifecycles) next(l *logBuilder, recs []eventstore.Record) []eventstore.Record {
	p := int32((c.doc + 1) % 12)
	for _, e := range c.events() {
		recs = append(recs, l.record(p, e))
	}
	return recs
}

func (c *lifecycles) events() []domain.Event {
	c.doc++
	id, batch, claim := fmt.Sprintf("doc_%d", c.doc), fmt.Sprintf("b%d", c.doc), fmt.Sprintf("c%d", c.doc)
	return []domain.Event{
		&domain.DocumentUploaded{Meta: meta("o1", 1), DocumentID: id, BatchName: &batch, FileName: id + ".txt", ContentType: "text/plain", Size: 230, BlobKey: "blob/" + id},
		&domain.DocumentQueued{Meta: meta("o1", 2), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1},
		&domain.ProcessingStarted{Meta: meta("o1", 3), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1, ClaimID: claim, Worker: "w1"},
		&domain.DocumentPreprocessed{Meta: meta("o1", 4), DocumentID: id, ClaimID: claim, ContentType: "text/plain", Pages: 1, TextChars: 230},
		&domain.DocumentSucceeded{Meta: meta("o1", 5), DocumentID: id, ClaimID: claim, LineItems: lifecycleItems},
	}
}

var lifecycleItems = []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 10.5, Amount: 21}, {Description: "Service fee", Quantity: 1, UnitPrice: 10, Amount: 10}}

// BenchmarkFoldInMemory folds the records of BenchmarkApplyBenchLog (16
// fetches, 65k records, applied to real views first so that their
// deliveries name real notifications) into documents and batch summaries
// held in maps: the domain's fold alone, with no storage, no history, no
// notifications, no offsets. No design that keeps these views, in Pebble
// or in memory, folds faster than this; BENCHMARKS.md compares it with
// raw consume to say what keeping the views in memory could buy.
func BenchmarkFoldInMemory(b *testing.B) {
	f := setup(b)
	bl := newBenchLog(b)
	var recs []eventstore.Record
	for range 16 {
		fetch := bl.fetch(b, f.v)
		applyFetch(b, f.v, fetch)
		recs = append(recs, fetch...)
	}
	events, folded := 0, 0
	for b.Loop() {
		docs := map[string]domain.Document{}
		batches := map[string]domain.Batch{}
		for _, r := range recs {
			id := domain.DocumentIDOf(r.Event)
			if id == "" {
				continue
			}
			before := docs[id]
			after, err := before.Apply(r.Event)
			if err != nil {
				b.Fatalf("%s of %s refused: %v", r.Event.Type(), id, err)
			}
			docs[id] = after
			batch, ok := batches[after.BatchName]
			if !ok {
				batch = domain.NewBatch(r.Event.Header().OrgID, after.BatchName)
			}
			batches[after.BatchName], _ = batch.Track(before, after)
			folded++
		}
		events += len(recs)
	}
	if folded == 0 {
		b.Fatal("no document event folded")
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
