package main

import (
	"fmt"
	"io"
	"slices"
)

// benchReport is what `docket bench` prints (as text, or JSON with --json).
type benchReport struct {
	Broker     string `json:"broker"`
	GoMaxProcs int    `json:"gomaxprocs"`
	GCPercent  int    `json:"gc_percent"`     // the Go runtime's GOGC during the run
	CGO        bool   `json:"cgo"`            // the binary links cgo: Pebble's memory is then outside the Go heap
	Linger     string `json:"produce_linger"` // the node's --produce-linger
	// RoundLinger is the node's --round-linger, also the append path's.
	RoundLinger string `json:"round_linger"`
	// AppendRounds is the node's --append-rounds (-1: off).
	AppendRounds    int  `json:"append_rounds"`
	ViewsWithoutWAL bool `json:"views_without_wal"` // the node's --views-without-wal, also the apply path's and the replay's
	WorkerSlots     int  `json:"worker_concurrency"`
	BatchSize       int  `json:"batch_size"`
	Webhooks        bool `json:"webhooks"`
	// FileCreate is what creating a file cost where the uploads go,
	// before the runs (bench_create.go); absent where it is not measured.
	FileCreate *fileCreate `json:"file_create,omitempty"`
	WarmUp     []warmRound `json:"warm_up"`
	// Warm says the warm-up ended because its last two rounds agreed
	// (warmedUp), not because --warm-up-rounds ran out.
	Warm       bool         `json:"warmed_up"`
	Peak       *phaseResult `json:"peak,omitempty"`
	PeakRounds []float64    `json:"peak_rounds,omitempty"` // documents/s of every closed loop; Peak is the best
	Half       *phaseResult `json:"half_load"`
	GETPhase   *phaseResult `json:"get_phase,omitempty"`
	GET        *getResult   `json:"get,omitempty"`
	RSS        *rssReport   `json:"rss,omitempty"`
	Ceilings   *ceilings    `json:"ceilings,omitempty"`
	Ratios     []ratio      `json:"ratios,omitempty"`
}

// warmRound is one closed-loop round of the warm-up.
type warmRound struct {
	Documents  int     `json:"documents"`
	DocsPerSec float64 `json:"documents_per_second"`
	// BrokerJITShare is the share of the brokers' CPU in the round that
	// their JIT compilers took; absent without --broker-pids.
	BrokerJITShare *float64 `json:"broker_jit_share,omitempty"`
}

func (wr warmRound) String() string {
	if wr.BrokerJITShare == nil {
		return fmt.Sprintf("%.0f documents/s", wr.DocsPerSec)
	}
	return fmt.Sprintf("%.0f documents/s, the broker's JIT %.0f %% of its CPU", wr.DocsPerSec, *wr.BrokerJITShare*100)
}

// phaseResult is one lifecycle run.
type phaseResult struct {
	Mode          string    `json:"mode"`
	Documents     int       `json:"documents"`
	Failed        int       `json:"failed"`
	Concurrency   int       `json:"concurrency,omitempty"`
	Rate          float64   `json:"rate,omitempty"`
	BatchSize     int       `json:"batch_size"`
	Seconds       float64   `json:"seconds"`
	DocsPerSec    float64   `json:"documents_per_second"`
	Events        int       `json:"events"`
	WorkRecords   int       `json:"work_records"`
	EventsPerSec  float64   `json:"events_per_second"`
	RecordsPerSec float64   `json:"records_per_second"`
	Upload        latency   `json:"upload"`
	ToSucceeded   latency   `json:"to_succeeded"`
	ToNotified    *latency  `json:"to_notified,omitempty"`
	Hops          []latency `json:"hops"`
	// CPU is the CPU time the phase cost per document, from its first
	// upload to its last notification.
	CPU *cpuUse `json:"cpu,omitempty"`
	// KafkaRequests is the Kafka requests the node's clients sent during
	// the phase, per document, by API (docket_kafka_requests_total): at
	// half of peak a document costs the broker several times the requests
	// it costs at the peak, where every request carries more records.
	KafkaRequests map[string]float64 `json:"kafka_requests_per_document,omitempty"`
	// Pressure is how much of the phase the machine's tasks were stalled
	// for CPU and I/O (bench_pressure.go); absent without /proc/pressure.
	Pressure *pressure `json:"pressure,omitempty"`
	// BlobJournal is what the blob store's journal did during the phase
	// (bench_journal.go); absent when it did nothing.
	BlobJournal *blobJournal `json:"blob_journal,omitempty"`
}

// ceilings are the raw and replay measurements.
type ceilings struct {
	RawConsume        rate     `json:"raw_consume"`
	RawProduce        rate     `json:"raw_produce"`
	RawProduceConsume rate     `json:"raw_produce_consume"`
	RawProduceLinger  rate     `json:"raw_produce_linger_5ms"`
	RawLatency        *latency `json:"raw_produce_to_consume_latency,omitempty"`
	// LifecycleFloor is the least latency a lifecycle's steps in a row
	// allow, drawn from the raw trip's and an fdatasync's
	// (bench_latfloor.go); absent without a half-of-peak run.
	LifecycleFloor *latencyFloor `json:"lifecycle_floor,omitempty"`
	RawPebble      rate          `json:"raw_pebble"`
	// RawPebbleNoCopies is the same without the history's copies of the
	// events (he/).
	RawPebbleNoCopies rate `json:"raw_pebble_without_copies"`
	// RawIngest and RawIngestNoCopies write the same keys into an sstable
	// and ingest it (bench_replay.go).
	RawIngest         rate `json:"raw_pebble_ingest"`
	RawIngestNoCopies rate `json:"raw_pebble_ingest_without_copies"`
	AppendPath        rate `json:"append_path"`
	ApplyPath         rate `json:"apply_path"`
	Replay            rate `json:"replay"`
	Decode            rate `json:"avro_decode"`
	// Fold is the domain's fold alone, into documents and batch
	// summaries in maps (foldPath), of the apply path's records.
	Fold rate `json:"fold_in_memory"`
	// FoldedEvents is how many of them were document events the fold took.
	FoldedEvents int `json:"fold_took_events"`
	ViewKeys     int `json:"view_keys"`
	// Floor is the least CPU the consume-side targets need against what
	// the cores give (bench_floor.go); absent where CPU is not read.
	Floor *cpuFloor `json:"cpu_floor,omitempty"`
	// Rounds are the raw consume, replay, apply-path, decode and fold
	// measurements of every round, ProduceRounds the raw produce,
	// produce+consume and append-path ones; the figures above are the best
	// of them.
	Rounds        []consumeRound `json:"consume_rounds"`
	ProduceRounds []produceRound `json:"produce_rounds"`

	kvs [][2][]byte
}

// consumeRound is one round of the consume-side measurements.
type consumeRound struct {
	RawConsume rate `json:"raw_consume"`
	Replay     rate `json:"replay"`
	ApplyPath  rate `json:"apply_path"`
	Decode     rate `json:"avro_decode"`
	Fold       rate `json:"fold_in_memory"`
}

// produceRound is one round of the produce-side measurements.
type produceRound struct {
	RawProduce        rate `json:"raw_produce"`
	RawProduceConsume rate `json:"raw_produce_consume"`
	AppendPath        rate `json:"append_path"`
}

// noTarget marks a ratio printed to explain others, with no target of its own.
const noTarget = "(no target)"

// ratio is one of the targets, measured.
type ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
}

func (r *benchReport) ratios() {
	c := r.Ceilings
	add := func(name string, v float64, target string, met bool) {
		r.Ratios = append(r.Ratios, ratio{Name: name, Value: v, Target: target, Met: met})
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	v := div(c.AppendPath.PerSec, c.RawProduce.PerSec)
	add("append path / raw produce (records/s)", v, ">= 0.6", v >= 0.6)
	v = div(c.ApplyPath.PerSec, c.RawConsume.PerSec)
	add("projection apply / raw consume (records/s)", v, ">= 0.3", v >= 0.3)
	v = div(c.Replay.PerSec, c.RawConsume.PerSec)
	add("replay (cold, offset 0) / raw consume", v, ">= 0.5", v >= 0.5)
	if r.Peak != nil {
		v = div(c.Replay.PerSec, r.Peak.EventsPerSec)
		add("replay / steady ingest at peak (events/s)", v, ">= 2", v >= 2)
		v = div(r.Peak.RecordsPerSec, c.RawProduceConsume.PerSec)
		add("end to end at peak / raw produce+consume (records/s)", v, ">= 0.25", v >= 0.25)
	}
	if c.RawLatency != nil && r.Half != nil {
		p99 := r.Half.ToSucceeded.P99
		if r.Half.ToNotified != nil {
			p99 = r.Half.ToNotified.P99
		}
		v = div(p99, c.RawLatency.P99)
		add("lifecycle p99 at half of peak / raw produce->consume p99", v, "<= 3", v <= 3)
		// The same produce->consume trip the raw figure measures, made by
		// docket's events: appended by the event store, applied by the
		// views (fetch, decode, fold, Pebble commit). The lifecycle above
		// is about a dozen such trips and HTTP calls in a row.
		for _, h := range r.Half.Hops {
			if h.Name == hopAnyApplied && h.Count > 0 {
				v = div(h.P99, c.RawLatency.P99)
				add("one hop: event appended -> applied p99 at half of peak / raw p99", v, noTarget, true)
			}
		}
		if lf := c.LifecycleFloor; lf != nil {
			v = div(lf.Floor.P99, c.RawLatency.P99)
			add(fmt.Sprintf("bound: lifecycle floor p99 (%d raw trips + 1 fdatasync) / raw p99", lf.KafkaTrips), v, noTarget, true)
		}
	}
	// Two bounds of the consume side. Avro decoding alone, which the raw
	// consume does not do; and writing the views a replay ends with —
	// only their final keys, each once, no reads, no fold — at the raw
	// Pebble rate, counted in the events that made them: no fold that
	// keeps these views in Pebble can replay faster than that.
	v = div(c.Decode.PerSec, c.RawConsume.PerSec)
	add("bound: Avro decode alone (one core, in memory) / raw consume", v, noTarget, true)
	if c.ViewKeys > 0 && c.Replay.Records > 0 {
		bound := c.RawPebble.PerSec * float64(c.Replay.Records) / float64(c.ViewKeys) // events/s
		add("bound: raw Pebble writes of the final views, events/s / raw consume", div(bound, c.RawConsume.PerSec), noTarget, true)
		// How close the apply path comes to that bound. Both in events/s:
		// the apply path may fold only the first --apply-records of the
		// log, so its seconds cannot be set against the whole replay's
		// view keys (until 2026-12-05 this row did, when it folded the
		// first 50,000, and read 3.6 times too high).
		add("projection apply / that raw Pebble bound (events/s)", div(c.ApplyPath.PerSec, bound), noTarget, true)
	}
	// Above 1: reading, decoding and writing these views, with only the
	// minimal fold, already needs more CPU than the machine's cores give
	// at the target.
	if f := c.Floor; f != nil {
		add(fmt.Sprintf("CPU floor: replay at %.1f x raw consume needs / what the cores give", f.Replay.Target), f.Replay.Share, noTarget, true)
		add(fmt.Sprintf("CPU floor: apply at %.1f x raw consume needs / what the cores give", f.Apply.Target), f.Apply.Share, noTarget, true)
	}
	if r.GET != nil {
		ingest := r.Half.Rate
		if r.GETPhase != nil {
			ingest = r.GETPhase.Rate
		}
		add(fmt.Sprintf("GET p99 ms at %.0f requests/s while ingesting %.0f documents/s", r.GET.Rate, ingest), r.GET.Latency.P99, "<= 5", r.GET.Latency.P99 <= 5 && r.GET.Errors == 0)
	}
	if r.RSS != nil && len(r.RSS.Samples) >= 2 {
		add("resident size drift % over the open loop (after warm-up)", r.RSS.DriftPct, "<= 10", r.RSS.DriftPct <= 10)
	}
}

func (r *benchReport) print(w io.Writer) {
	fmt.Fprintf(w, "broker=%s gomaxprocs=%d gc_percent=%d cgo=%v produce_linger=%s round_linger=%s append_rounds=%d worker_slots=%d batch_size=%d webhooks=%v\n", r.Broker, r.GoMaxProcs, r.GCPercent, r.CGO, r.Linger, r.RoundLinger, r.AppendRounds, r.WorkerSlots, r.BatchSize, r.Webhooks)
	if r.FileCreate != nil {
		fmt.Fprintf(w, "creating a file where the uploads go: %s\n", r.FileCreate)
	}
	fmt.Fprintf(w, "warm-up:")
	for _, wr := range r.WarmUp {
		fmt.Fprintf(w, " %.0f", wr.DocsPerSec)
	}
	docs := 0
	if len(r.WarmUp) > 0 {
		docs = r.WarmUp[0].Documents
	}
	fmt.Fprintf(w, " documents/s (closed-loop rounds of %d documents until two in a row are within %.0f %%", docs, warmUpSteady*100)
	if slices.ContainsFunc(r.WarmUp, func(wr warmRound) bool { return wr.BrokerJITShare != nil }) {
		fmt.Fprintf(w, " and the broker's JIT took at most %.0f %% of its CPU in both", warmUpJIT*100)
	}
	if n := len(r.WarmUp); n > 0 && !r.Warm {
		fmt.Fprintf(w, "; the last two did not: the runs below met a broker, or a node, still warming up")
	}
	fmt.Fprintln(w, ")")
	if len(r.PeakRounds) > 0 {
		fmt.Fprintf(w, "closed loops:")
		for _, x := range r.PeakRounds {
			fmt.Fprintf(w, " %.0f", x)
		}
		fmt.Fprintf(w, " documents/s (the peak below is the best)\n")
	}
	for _, p := range []*phaseResult{r.Peak, r.Half, r.GETPhase} {
		if p == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s loop: %d documents (%d failed), concurrency %d, rate %.0f/s: %.1f documents/s in %.2f s; %d events + %d work records = %.0f records/s\n",
			p.Mode, p.Documents, p.Failed, p.Concurrency, p.Rate, p.DocsPerSec, p.Seconds, p.Events, p.WorkRecords, p.RecordsPerSec)
		if c := p.CPU; c != nil {
			fmt.Fprintf(w, "  CPU per document: %.2f ms in this process (node and load generator)", c.ProcessMsPerDoc)
			if c.BrokerMsPerDoc != nil {
				fmt.Fprintf(w, ", %.2f ms in the broker (%.2f ms of it its JIT compiling)", *c.BrokerMsPerDoc, *c.BrokerJITMsPerDoc)
			}
			fmt.Fprintln(w)
		}
		printRequests(w, p)
		if p.Pressure != nil {
			fmt.Fprintf(w, "  machine: %s\n", p.Pressure)
		}
		if p.BlobJournal != nil {
			fmt.Fprintf(w, "  blob journal: %s\n", p.BlobJournal)
		}
		lats := []latency{p.Upload, p.ToSucceeded}
		if p.ToNotified != nil {
			lats = append(lats, *p.ToNotified)
		}
		for _, l := range append(lats, p.Hops...) {
			printLatency(w, l)
		}
	}
	if g := r.GET; g != nil {
		fmt.Fprintf(w, "\nGET %s from a separate process: %.0f/s offered, %.0f/s sent, %d errors, %d non-2xx, %d sent late\n", g.URL, g.Rate, g.Achieved, g.Errors, g.Non2xx, g.Late)
		printLatency(w, g.Latency)
		if g.CPUPerRequest != nil {
			fmt.Fprintf(w, "  the generator's own CPU: %.1f µs per request\n", *g.CPUPerRequest)
		}
	}
	if m := r.RSS; m != nil && len(m.Samples) > 0 {
		fmt.Fprintf(w, "\nresident size every %.0f s: first %.1f MiB, last %.1f MiB, max %.1f MiB; after warm-up %.1f MiB, at the end %.1f MiB: drift %+.1f %%\n",
			m.IntervalSec, m.FirstMiB, m.LastMiB, m.MaxMiB, m.BaseMiB, m.EndMiB, m.DriftPct)
		first, last := m.Samples[0], m.Samples[len(m.Samples)-1]
		fmt.Fprintf(w, "  of it, first -> last: Go heap in use %.1f -> %.1f MiB; views: block cache %.1f -> %.1f, memtables %.1f -> %.1f, key filter %.1f -> %.1f MiB\n",
			first.HeapMiB, last.HeapMiB, first.BlockCacheMiB, last.BlockCacheMiB, first.MemTablesMiB, last.MemTablesMiB, first.KeyFilterMiB, last.KeyFilterMiB)
	}
	if c := r.Ceilings; c != nil {
		fmt.Fprintf(w, "\nceilings (same broker and disk, same records):\n")
		for _, x := range []struct {
			name string
			r    rate
		}{{"raw consume of the event log (cold, offset 0)", c.RawConsume}, {"replay into empty views (cold, offset 0)", c.Replay},
			{"projection apply (decode, fold, Pebble batch)", c.ApplyPath}, {"raw produce (acks=all, idempotent)", c.RawProduce}, {"raw produce, 5 ms linger", c.RawProduceLinger},
			{"append path (event store)", c.AppendPath}, {"raw produce+consume", c.RawProduceConsume}, {"raw Pebble batch writes (view keys)", c.RawPebble},
			{"  the same without the history's copies", c.RawPebbleNoCopies}, {"raw Pebble sstable ingestion (view keys)", c.RawIngest},
			{"  the same without the history's copies", c.RawIngestNoCopies}, {"Avro decode alone (in memory)", c.Decode},
			{"fold alone (documents, batches, in maps)", c.Fold}} {
			fmt.Fprintf(w, "  %-48s %8d records in %6.2f s = %9.0f /s", x.name, x.r.Records, x.r.Seconds, x.r.PerSec)
			if x.r.CPU != nil {
				fmt.Fprintf(w, ", CPU %.2f µs a record", x.r.CPU.ProcessUs)
				if x.r.CPU.BrokerUs != nil {
					fmt.Fprintf(w, " + %.2f in the broker", *x.r.CPU.BrokerUs)
				}
			}
			fmt.Fprintln(w)
		}
		for i, rd := range c.Rounds {
			fmt.Fprintf(w, "  consume round %d of %d: raw consume %.0f /s, replay %.0f /s, apply %.0f /s, decode %.0f /s\n",
				i+1, len(c.Rounds), rd.RawConsume.PerSec, rd.Replay.PerSec, rd.ApplyPath.PerSec, rd.Decode.PerSec)
			if x := rd.ApplyPath.Views; x != nil {
				x.print(w, "    the apply path's views")
			}
			if x := rd.Replay.Views; x != nil {
				x.print(w, "    the replay's views")
			}
		}
		for i, rd := range c.ProduceRounds {
			fmt.Fprintf(w, "  produce round %d of %d: raw produce %.0f /s, raw produce+consume %.0f /s, append path %.0f /s\n",
				i+1, len(c.ProduceRounds), rd.RawProduce.PerSec, rd.RawProduceConsume.PerSec, rd.AppendPath.PerSec)
		}
		fmt.Fprintf(w, "  (each figure above is the best of its rounds, but the 5 ms linger, measured once)\n")
		if c.RawLatency != nil {
			printLatency(w, *c.RawLatency)
		}
		if c.LifecycleFloor != nil {
			c.LifecycleFloor.print(w)
		}
		if c.Floor != nil {
			c.Floor.print(w)
		}
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintf(w, "\nratios:\n")
		for _, x := range r.Ratios {
			mark := "met"
			switch {
			case x.Target == noTarget:
				mark = ""
			case !x.Met:
				mark = "NOT met"
			}
			fmt.Fprintf(w, "  %-72s %8.2f  target %-11s %s\n", x.Name, x.Value, x.Target, mark)
		}
	}
}

func printLatency(w io.Writer, l latency) {
	name := l.Name
	if len(name) > 62 {
		name = name[:62]
	}
	fmt.Fprintf(w, "  %-62s p50 %7.1f  p90 %7.1f  p99 %7.1f  max %7.1f ms (n=%d)\n", name, l.P50, l.P90, l.P99, l.Max, l.Count)
}
