package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// benchFlags are `docket bench`'s flags.
type benchFlags struct {
	docs, conc, batchSize, workers, getConc int
	rate, getRate, getIngest                float64
	duration, rssEvery, linger, roundLinger time.Duration
	rounds                                  int
	brokers, cpuProfile, loadGet, ceilProf  string
	blobDir                                 string
	heapProfile, brokerPIDs                 string
	pids                                    []int
	asJSON, webhooks, ceilings              bool
	viewsWithoutWAL                         bool
	ceilingRecords, ceilingRounds           int
	applyRecords                            int
	warmRounds, warmDocs, peakRounds        int
	gcPercent                               int
	memoryLimit                             int64
}

// bench starts a node in-process (embedded broker unless --kafka-brokers is
// given) and drives upload -> process -> succeeded -> webhook received
// through the HTTP API on loopback. By default it runs the whole set: a
// closed loop for the peak, an open loop at half of it with a fixed-rate
// GET load from another process and memory samples, then the ceilings
// (raw franz-go and raw Pebble on the same broker and disk, replay) and the
// ratios. With --rate it runs only an open loop at that rate.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f benchFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&f.docs, "documents", 2000, "documents of the closed loop (or of the --rate run)")
	fs.IntVar(&f.conc, "concurrency", 32, "concurrent clients of the closed loop; also the in-flight appends of the append-path and raw-produce ceilings")
	fs.IntVar(&f.batchSize, "batch-size", 1, "documents each client uploads into a batch before processing it")
	fs.Float64Var(&f.rate, "rate", 0, "open loop only, at this many documents/s (0: the whole set); with --load-get: GET requests/s")
	fs.DurationVar(&f.duration, "duration", 20*time.Second, "length of the open-loop run at half of peak (or at --rate when --documents is 0)")
	fs.DurationVar(&f.rssEvery, "rss-interval", 10*time.Second, "resident-size sampling interval during the open loop")
	fs.IntVar(&f.workers, "worker-concurrency", 8, "worker slots of the node")
	fs.DurationVar(&f.linger, "produce-linger", 0, "the node's --produce-linger (the raw produce ceiling keeps none)")
	fs.DurationVar(&f.roundLinger, "round-linger", time.Millisecond, "the node's --round-linger, also the append path's")
	fs.BoolVar(&f.viewsWithoutWAL, "views-without-wal", false, "the node's --views-without-wal, also the apply path's and the replay's")
	fs.IntVar(&f.rounds, "append-rounds", 1, "the node's --append-rounds, also the append path's (-1: off; the raw produce ceiling leaves batching to franz-go)")
	fs.StringVar(&f.brokers, "kafka-brokers", env("kafka-brokers", ""), "external Kafka brokers (default: embedded)")
	fs.BoolVar(&f.asJSON, "json", false, "print JSON")
	fs.BoolVar(&f.webhooks, "webhooks", true, "register a batch webhook to the bench's loopback receiver; a document ends when its notification arrives")
	fs.BoolVar(&f.ceilings, "ceilings", true, "measure the raw Kafka and Pebble ceilings and replay after the runs, and print ratios")
	fs.IntVar(&f.gcPercent, "gc-percent", 0, "Go GC target of the process, as serve's --gc-percent")
	fs.Int64Var(&f.memoryLimit, "memory-limit", 0, "soft memory limit of the process in bytes, as serve's --memory-limit")
	fs.IntVar(&f.ceilingRecords, "ceiling-records", 50000, "records (at most) the raw produce and append-path ceilings write")
	fs.IntVar(&f.applyRecords, "apply-records", 1000000, "records (at most) the apply path folds, from the start of the log that raw consume reads whole; the default covers the whole log of the make bench-kafka set")
	fs.IntVar(&f.warmRounds, "warm-up-rounds", 100, "most closed-loop warm-up rounds; the warm-up ends once two rounds in a row are within 10 % of each other and, with --broker-pids, the brokers' JIT compilers took at most 10 % of their CPU in both")
	fs.IntVar(&f.warmDocs, "warm-up-documents", 400, "documents of one warm-up round (about a second at the peak of a 2-core machine)")
	fs.IntVar(&f.peakRounds, "peak-rounds", 3, "closed loops of --documents for the peak; the peak is the best of them")
	fs.IntVar(&f.ceilingRounds, "ceiling-rounds", 3, "rounds of raw consume, replay and apply path; each figure is the best of its rounds")
	fs.Float64Var(&f.getRate, "get-rate", 2000, "GET /v1/documents/{id} requests/s from a separate process, in an open loop of its own (0: none)")
	fs.Float64Var(&f.getIngest, "get-ingest", 0.25, "ingest during the GET load, as a fraction of the peak documents/s")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the lifecycle runs to this file")
	fs.StringVar(&f.ceilProf, "ceilings-cpuprofile", "", "write a CPU profile of the replay and apply-path measurements to this file")
	fs.StringVar(&f.heapProfile, "heapprofile", "", "write heap profiles of the half-of-peak run to PREFIX-base.pprof (after its second tenth, the drift's baseline) and PREFIX-end.pprof; each forces a collection")
	fs.StringVar(&f.brokerPIDs, "broker-pids", "", "comma-separated process ids of the external brokers, whose CPU time each run reports per document (make bench-kafka passes them)")
	fs.StringVar(&f.loadGet, "load-get", "", "run only the GET load generator against this URL (used as a child process)")
	fs.StringVar(&f.blobDir, "blob-dir", "", "keep the node's uploads in a directory of their own under this one, removed at the end (default: in the node's data directory, under $TMPDIR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.loadGet != "" {
		if f.rate <= 0 {
			return usageError("--load-get needs --rate")
		}
		return loadGet(ctx, f.loadGet, os.Getenv("DOCKET_BENCH_KEY"), getLoad{perSec: f.rate, d: f.duration, senders: getSenders, timeout: getTimeout}, stdout)
	}
	if f.batchSize < 1 || f.docs%f.batchSize != 0 || f.conc < 1 {
		return usageError("--documents must be a multiple of --batch-size; --concurrency at least 1")
	}
	if f.ceilingRecords < 1 || f.applyRecords < 1 {
		return usageError("--ceiling-records and --apply-records must be at least 1")
	}
	if err := validateGC(f.gcPercent, f.memoryLimit); err != nil {
		return usageError(err.Error())
	}
	var err error
	if f.pids, err = parsePIDs(f.brokerPIDs); err != nil {
		return usageError(err.Error())
	}
	// The node under test runs in this process: it gets what serve would.
	tuneGC(f.gcPercent, f.memoryLimit)
	rep, err := runBench(ctx, f, stderr)
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.print(stdout)
	return nil
}

// benchEnv is the node under test and the clients around it.
type benchEnv struct {
	dir   string
	blobs string // where the node keeps its uploads
	n     *node
	c     *benchClient
	hooks *hookReceiver
}

func startBenchEnv(ctx context.Context, f benchFlags, stderr io.Writer) (*benchEnv, func(), error) {
	dir, err := os.MkdirTemp("", "docket-bench-")
	if err != nil {
		return nil, nil, err
	}
	e := &benchEnv{dir: dir}
	// Closed last first, as deferred calls: the node before the directories
	// it writes in.
	closers := []func(){func() { os.RemoveAll(dir) }}
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	blobs := ""
	if f.blobDir != "" {
		// The uploads on another device: on one shared disk their fsyncs
		// are what stalls the rest (BENCHMARKS.md, "The GET generator's
		// share of the machine").
		if blobs, err = os.MkdirTemp(f.blobDir, "docket-bench-blobs-"); err != nil {
			cleanup()
			return nil, nil, err
		}
		closers = append(closers, func() { os.RemoveAll(blobs) })
	}
	e.c = newBenchClient(1024)
	cfg := Config{
		DataDir: filepath.Join(dir, "node"), Listen: "127.0.0.1:0", BrokerListen: "127.0.0.1:0", KafkaBrokers: f.brokers,
		TopicPrefix: "bench-" + eventstore.NewID(""), Partitions: 12, ReplicationFactor: -1, WorkerConcurrency: f.workers,
		DocumentTimeout: time.Minute, MaxPages: 50, MaxUpload: 1 << 20, StatusRate: 1 << 30, IPRate: 1 << 30, Rate: 1 << 30,
		LogFormat: "json", LogLevel: "error", Roles: "api,projections,duties,worker",
		WebhookAllowLoopback: true, WebhookSchedule: "0s,1s,5s", StallAfter: 5 * time.Minute,
		ProduceLinger: f.linger, AppendRounds: f.rounds, RoundLinger: f.roundLinger, ViewsWithoutWAL: f.viewsWithoutWAL, BlobDir: blobs,
	}
	// The dispatch hop ends when the worker takes the item: its record's
	// produce timestamp.
	cfg.workReceived = func(it eventstore.WorkItem, at time.Time) {
		if tr := e.c.tr.Load(); tr != nil {
			tr.dispatched(it.DocumentID, at)
		}
	}
	listener := func(recs []eventstore.Record) {
		if tr := e.c.tr.Load(); tr != nil {
			tr.applied(recs)
		}
	}
	e.blobs = cfg.blobDir()
	e.n, err = startNodeWith(ctx, cfg, zerolog.New(stderr).Level(zerolog.ErrorLevel), projections.OnApplied(listener))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	closers = append(closers, e.n.close)
	key, err := os.ReadFile(filepath.Join(cfg.DataDir, "api-key"))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	e.c.base, e.c.key = "http://"+e.n.httpAddr, strings.TrimSpace(string(key))
	closers = append(closers, e.c.closeIdle)
	if f.webhooks {
		if e.hooks, err = startHookReceiver(e.c); err != nil {
			cleanup()
			return nil, nil, err
		}
		e.c.hookURL = e.hooks.url
		closers = append(closers, e.hooks.close)
	}
	return e, cleanup, nil
}

// runBench runs the phases and the ceilings.
func runBench(ctx context.Context, f benchFlags, stderr io.Writer) (*benchReport, error) {
	e, cleanup, err := startBenchEnv(ctx, f, stderr)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep := &benchReport{Broker: "embedded (kfake, fsync per produced batch)", GoMaxProcs: runtimeProcs(), GCPercent: gcPercentNow(), Linger: f.linger.String(), RoundLinger: f.roundLinger.String(), AppendRounds: f.rounds, ViewsWithoutWAL: f.viewsWithoutWAL, WorkerSlots: f.workers, BatchSize: f.batchSize, Webhooks: f.webhooks}
	if f.brokers != "" {
		rep.Broker = f.brokers
	}
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", args...) }
	if rep.CGO = linksCgo(); rep.CGO {
		progress("warning: this binary links cgo (built without CGO_ENABLED=0, as make build sets): Pebble's memtables and block cache are then C memory, and its figures do not compare with those of make build's binary")
	}

	if fc, ok, err := probeCreate(e.blobs); err != nil {
		return nil, err
	} else if ok {
		rep.FileCreate = &fc
		warnSlowCreate(stderr, e.blobs, fc)
	}
	if rep.WarmUp, err = e.warmUp(ctx, f, progress); err != nil {
		return nil, err
	}
	if n := len(rep.WarmUp); n >= 2 {
		rep.Warm = warmedUp(rep.WarmUp[n-2], rep.WarmUp[n-1])
	}
	if !rep.Warm {
		progress("warning: the warm-up ran out of rounds (--warm-up-rounds %d) before two in a row agreed", f.warmRounds)
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	halfRate := f.rate
	if f.rate <= 0 {
		// The peak in rounds too, the best of them, as the ceilings it is
		// divided by: a ratio of a best round to a single one would lean
		// towards the ceiling.
		for round := range max(f.peakRounds, 1) {
			progress("closed loop %d of %d: %d documents, %d clients", round+1, max(f.peakRounds, 1), f.docs, f.conc)
			r, err := e.phase(ctx, f, "closed", func() (int, error) { return f.docs, e.c.closedLoop(ctx, f.docs, f.conc, f.batchSize) })
			if err != nil {
				return nil, err
			}
			rep.PeakRounds = append(rep.PeakRounds, r.DocsPerSec)
			if rep.Peak == nil || r.DocsPerSec > rep.Peak.DocsPerSec {
				rep.Peak = r
			}
		}
		rep.Peak.Concurrency = f.conc
		halfRate = rep.Peak.DocsPerSec / 2
	}
	if f.rate > 0 { // one open loop, with the GET load
		progress("open loop at %.0f documents/s for %s (GET load %.0f/s)", halfRate, f.duration, f.getRate)
		rep.Half, err = e.openPhase(ctx, f, halfRate, f.getRate, rep)
	} else {
		// Latency and memory at half of peak, then the GET load in a loop
		// of its own: on two cores the GETs and their generator take a
		// share of the CPU that would distort the half-of-peak figures.
		progress("open loop at %.0f documents/s for %s", halfRate, f.duration)
		if rep.Half, err = e.openPhase(ctx, f, halfRate, 0, rep); err == nil && f.getRate > 0 {
			r := rep.Peak.DocsPerSec * f.getIngest
			progress("open loop at %.0f documents/s for %s with %.0f GET/s", r, f.duration, f.getRate)
			rep.GETPhase, err = e.openPhase(ctx, f, r, f.getRate, rep)
		}
	}
	if err != nil {
		return nil, err
	}
	if f.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if f.ceilings {
		progress("ceilings")
		if err := e.measureCeilings(ctx, f, rep); err != nil {
			return nil, err
		}
		rep.ratios()
	}
	return rep, nil
}

// warmUp runs closed loops of --warm-up-documents at the peak's
// concurrency until two in a row agree (warmedUp), or --warm-up-rounds
// have run. A real broker is a JVM: for its first tens of thousands of
// documents its JIT is still compiling, on the same cores as the node. A
// peak measured then came out 30-40 % below one measured minutes later on
// the same broker (437 and 506 against 604 and 740 documents/s,
// BENCHMARKS.md), while the ceilings, measured last, always met a warm
// broker. Two rounds of the same rate were not enough: on a fresh broker
// the rate stalls for rounds at a time while the compilers take half of
// its CPU, so the brokers' compiler threads are read too. Pebble's
// caches and the connection pools warm up as well.
func (e *benchEnv) warmUp(ctx context.Context, f benchFlags, progress func(string, ...any)) ([]warmRound, error) {
	docs := max(f.warmDocs/f.batchSize, 1) * f.batchSize
	var rounds []warmRound
	for i := range max(f.warmRounds, 1) {
		r, err := e.phase(ctx, f, "warm-up", func() (int, error) { return docs, e.c.closedLoop(ctx, docs, f.conc, f.batchSize) })
		if err != nil {
			return nil, err
		}
		wr := warmRound{Documents: docs, DocsPerSec: r.DocsPerSec}
		if c := r.CPU; c != nil && c.BrokerMsPerDoc != nil && *c.BrokerMsPerDoc > 0 {
			share := *c.BrokerJITMsPerDoc / *c.BrokerMsPerDoc
			wr.BrokerJITShare = &share
		}
		rounds = append(rounds, wr)
		progress("warm-up round %d: %s", i+1, wr)
		if i > 0 && warmedUp(rounds[i-1], wr) {
			break
		}
	}
	return rounds, nil
}

// warmedUp reports whether the warm-up may end after rounds prev and
// last: their rates are within warmUpSteady of each other, and in both
// the brokers' JIT compilers took at most warmUpJIT of the brokers' CPU
// (where it is read).
func warmedUp(prev, last warmRound) bool {
	quiet := func(r warmRound) bool { return r.BrokerJITShare == nil || *r.BrokerJITShare <= warmUpJIT }
	return math.Abs(last.DocsPerSec-prev.DocsPerSec) <= warmUpSteady*prev.DocsPerSec && quiet(prev) && quiet(last)
}

const (
	// warmUpSteady is how close two warm-up rounds in a row must be.
	warmUpSteady = 0.10
	// warmUpJIT is the most of the brokers' CPU that their JIT may take
	// in the last two rounds of the warm-up. A broker that had run for
	// half an hour stayed under it in most rounds, with bursts of
	// recompiling; a fresh one took 42-72 % in each of its first 25
	// rounds of 400 documents (BENCHMARKS.md).
	warmUpJIT = 0.10
)

// phase runs one load, waits until every document started has finished,
// and measures it.
func (e *benchEnv) phase(ctx context.Context, f benchFlags, mode string, run func() (int, error)) (*phaseResult, error) {
	tr := newTracker(f.webhooks)
	e.c.tr.Store(tr)
	e.c.uploads = hist{}
	before, err := e.logEnds(ctx)
	if err != nil {
		return nil, err
	}
	clock := cpuClock{brokerPIDs: f.pids}
	cpu0 := clock.read()
	psi0 := readPressure()
	req0 := e.n.metrics.KafkaRequests()
	j0, _ := journalStats(e.n.blobs)
	docs, err := run()
	if err != nil {
		return nil, err
	}
	if err := tr.waitFinished(ctx, docs, 5*time.Minute); err != nil {
		return nil, err
	}
	cpu := cpu0.use(clock.read(), docs)
	psi := psi0.since(readPressure())
	reqs := requestsPerDoc(req0, e.n.metrics.KafkaRequests(), docs)
	j1, _ := journalStats(e.n.blobs)
	if err := e.n.failed(); err != nil {
		return nil, err
	}
	after, err := e.logEnds(ctx)
	if err != nil {
		return nil, err
	}
	first, last := tr.span()
	el := last.Sub(first)
	_, failed := tr.counts()
	r := &phaseResult{Mode: mode, Documents: docs, Failed: failed, BatchSize: f.batchSize, Seconds: el.Seconds(),
		DocsPerSec: float64(docs) / el.Seconds(), Events: int(after[0] - before[0]), WorkRecords: int(after[1] - before[1]),
		Upload: e.c.uploads.summary("upload request"), ToSucceeded: tr.toSucceeded.summary("upload -> succeeded applied"),
		Hops: tr.hopSummaries(), CPU: cpu, KafkaRequests: reqs, Pressure: psi, BlobJournal: journalUse(j0, j1)}
	r.EventsPerSec = float64(r.Events) / el.Seconds()
	r.RecordsPerSec = float64(r.Events+r.WorkRecords) / el.Seconds()
	if f.webhooks {
		s := tr.toNotif.summary("upload -> webhook received")
		r.ToNotified = &s
	}
	return r, nil
}

// openPhase is the open loop at perSec, with getRate GETs/s (0: none) or
// else RSS samples.
func (e *benchEnv) openPhase(ctx context.Context, f benchFlags, perSec, getRate float64, rep *benchReport) (*phaseResult, error) {
	docs := 0
	if f.rate > 0 {
		docs = f.docs
	}
	var waitGet func() (getResult, error)
	heap := ""
	if getRate == 0 || f.rate > 0 { // the run whose memory is reported
		heap = f.heapProfile
	}
	span := f.duration
	if docs > 0 {
		span = time.Duration(float64(docs) / perSec * float64(time.Second))
	}
	stopRSS := sampleRSS(ctx, f.rssEvery, e.n.views.Memory, heap, span)
	mode := "open"
	if getRate > 0 {
		mode = "open, under the GET load,"
	}
	r, err := e.phase(ctx, f, mode, func() (int, error) {
		loopDone := make(chan struct{})
		var n int
		var err error
		go func() {
			defer close(loopDone)
			n, err = e.c.openLoop(ctx, perSec, docs, f.duration, f.batchSize)
		}()
		if getRate > 0 { // once there is a document to read
			for e.c.lastDoc.Load() == nil {
				select {
				case <-loopDone: // the loop ended without a document
					return n, err
				case <-ctx.Done():
					<-loopDone
					return n, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
			url := e.c.base + "/v1/documents/" + e.c.lastDoc.Load().(string)
			var gerr error
			if waitGet, gerr = spawnGetLoad(ctx, url, e.c.key, getRate, span); gerr != nil {
				<-loopDone
				return n, gerr
			}
		}
		<-loopDone
		return n, err
	})
	rss, herr := stopRSS()
	if getRate == 0 || f.rate > 0 {
		rep.RSS = &rss
	}
	if herr != nil && err == nil {
		err = herr
	}
	if waitGet != nil {
		g, gerr := waitGet()
		if gerr != nil && err == nil {
			err = gerr
		}
		rep.GET = &g
	}
	if err != nil {
		return nil, err
	}
	r.Rate = perSec
	return r, nil
}

// logEnds is the total of the event and work topics' end offsets.
func (e *benchEnv) logEnds(ctx context.Context) ([2]int64, error) {
	ev, err := topicEnds(ctx, e.n.store, e.n.store.EventsTopic())
	if err != nil {
		return [2]int64{}, err
	}
	wk, err := topicEnds(ctx, e.n.store, e.n.store.WorkTopic())
	if err != nil {
		return [2]int64{}, err
	}
	return [2]int64{sumEnds(ev), sumEnds(wk)}, nil
}

// linksCgo reports whether this binary was built with cgo. On a machine
// with a C compiler a plain `go build` links it, and Pebble then allocates
// its memtables and block cache with C malloc: the Go heap halves and the
// resident size behaves differently (BENCHMARKS.md, item 33), so a
// comparison of two binaries must know how each was built.
func linksCgo() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value == "1"
		}
	}
	return false
}
