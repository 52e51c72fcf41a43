package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestBenchRunsTheWholeSet runs `docket bench` small: every phase must
// finish every document through to its webhook, and the ceilings must
// measure the same log the runs wrote.
func TestBenchRunsTheWholeSet(t *testing.T) {
	t.Parallel()
	args := []string{"--documents", "12", "--concurrency", "3", "--duration", "1s", "--get-rate", "0",
		"--ceiling-records", "200", "--rss-interval", "200ms", "--warm-up-documents", "40", "--warm-up-rounds", "8", "--json"}
	heap := filepath.Join(t.TempDir(), "heap")
	// This process stands in for an external broker whose CPU is read.
	args = append(args, "--heapprofile", heap, "--broker-pids", strconv.Itoa(os.Getpid()))
	if b := os.Getenv(brokersEnv); b != "" {
		args = append(args, "--kafka-brokers", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := bench(ctx, args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.AppendRounds != 1 || rep.Linger != "0s" || rep.RoundLinger != "1ms" || rep.ViewsWithoutWAL {
		t.Fatalf("the node's settings: %d append rounds, %s linger, %s round linger, views without a WAL %v; want the defaults, 1, 0s, 1ms and false",
			rep.AppendRounds, rep.Linger, rep.RoundLinger, rep.ViewsWithoutWAL)
	}
	if rep.Peak == nil || rep.Peak.Documents != 12 || rep.Peak.Failed != 0 || rep.Peak.ToNotified == nil || rep.Peak.ToNotified.Count != 12 {
		t.Fatalf("closed loop: %+v", rep.Peak)
	}
	// Three closed loops by default; the peak is the best of them.
	if len(rep.PeakRounds) != 3 || slices.Max(rep.PeakRounds) != rep.Peak.DocsPerSec {
		t.Fatalf("closed loops %v, peak %v", rep.PeakRounds, rep.Peak.DocsPerSec)
	}
	if rep.Half == nil || rep.Half.Documents == 0 || rep.Half.ToNotified.Count != rep.Half.Documents {
		t.Fatalf("open loop: %+v", rep.Half)
	}
	// Before the runs, what creating a file costs where the uploads go.
	if fc := rep.FileCreate; (fc != nil) != (runtime.GOOS == "linux") || fc != nil && (fc.Files != createProbeFiles || fc.CPUMicros <= 0) {
		t.Fatalf("file creation probe on %s: %+v", runtime.GOOS, fc)
	}
	for _, p := range []*phaseResult{rep.Peak, rep.Half} {
		// This process, standing in for the broker, has no JIT compiler
		// threads.
		if c := p.CPU; c == nil || c.ProcessMsPerDoc <= 0 || c.BrokerMsPerDoc == nil || *c.BrokerMsPerDoc < 0 || c.BrokerJITMsPerDoc == nil || *c.BrokerJITMsPerDoc != 0 {
			t.Fatalf("%s loop: CPU per document %+v", p.Mode, c)
		}
		// Where the kernel reports stalls, every loop says how much.
		if _, err := os.Stat("/proc/pressure/io"); err == nil && (p.Pressure == nil || p.Pressure.IOFullPct > p.Pressure.IOSomePct) {
			t.Fatalf("%s loop: pressure %+v", p.Mode, p.Pressure)
		}
		// Every upload is small and new, so each loop's uploads went
		// through the blob journal, one record each (more if retried),
		// sharing syncs.
		if j := p.BlobJournal; j == nil || j.Records < uint64(p.Documents) || j.Syncs == 0 || j.Syncs > j.Records ||
			j.RecordsPerSync != float64(j.Records)/float64(j.Syncs) {
			t.Fatalf("%s loop: blob journal %+v for %d documents", p.Mode, j, p.Documents)
		}
		// Requests carry at least one record each.
		records := float64(p.Events+p.WorkRecords) / float64(p.Documents)
		if r := p.KafkaRequests; r["Produce"] <= 0 || r["Produce"] > records || r["Fetch"] <= 0 {
			t.Fatalf("%s loop: Kafka requests per document %v, %.2f records", p.Mode, r, records)
		}
	}
	for _, h := range rep.Peak.Hops {
		if h.Count == 0 {
			t.Errorf("hop %q measured nothing", h.Name)
		}
	}
	// The warm-up ends at two rounds within 10 % of each other, or at the
	// eighth (--warm-up-rounds); the stand-in broker never compiles.
	warm := 0
	for _, w := range rep.WarmUp {
		if w.Documents != 40 || w.DocsPerSec <= 0 || w.BrokerJITShare == nil || *w.BrokerJITShare != 0 {
			t.Fatalf("warm-up round: %+v", w)
		}
		warm += w.Documents
	}
	if n := len(rep.WarmUp); n < 2 || n > 8 {
		t.Fatalf("%d warm-up rounds: %+v", n, rep.WarmUp)
	} else if last, prev := rep.WarmUp[n-1].DocsPerSec, rep.WarmUp[n-2].DocsPerSec; n < 8 && (last < 0.9*prev || last > 1.1*prev) {
		t.Fatalf("the warm-up stopped before two rounds agreed: %+v", rep.WarmUp)
	} else if rep.Warm != (n < 8 || warmedUp(rep.WarmUp[n-2], rep.WarmUp[n-1])) {
		t.Fatalf("warmed_up %v after %d rounds: %+v", rep.Warm, n, rep.WarmUp)
	}
	c := rep.Ceilings
	// Warm-up, closed and open loop each append at least one event per
	// document; the replay and the raw consume read the same log.
	if c == nil || c.Replay.Records != c.RawConsume.Records || c.Replay.Records < warm+3*12+rep.Half.Documents {
		t.Fatalf("ceilings: %+v", c)
	}
	// Three rounds by default, each figure the best of them.
	if len(c.Rounds) != 3 {
		t.Fatalf("%d consume rounds, want 3", len(c.Rounds))
	}
	for _, rd := range c.Rounds {
		if rd.Replay.Records != c.Replay.Records || rd.Replay.PerSec > c.Replay.PerSec || rd.ApplyPath.PerSec > c.ApplyPath.PerSec || rd.RawConsume.PerSec > c.RawConsume.PerSec ||
			rd.Decode.Records != rd.ApplyPath.Records || rd.Decode.PerSec <= 0 || rd.Decode.PerSec > c.Decode.PerSec {
			t.Fatalf("a round beats the reported best, or measured another log: %+v vs %+v", rd, c)
		}
	}
	// Every round says what its views wrote. Their WAL holds the history's
	// copy of every event applied, so it took at least the log's values,
	// half its bytes or more; Pebble counts the WAL in what flushes write,
	// so the write amplification is at least 1.
	for i, rd := range c.Rounds {
		for name, w := range map[string]*viewsWrote{"apply path": rd.ApplyPath.Views, "replay": rd.Replay.Views} {
			if w == nil || w.WALBytes < uint64(c.RawConsume.Bytes)/2 || w.WriteAmp < 1 || (w.Flushes == 0) != (w.FlushBytes == 0) {
				t.Errorf("round %d, %s: the views wrote %+v, the log is %d bytes", i+1, name, w, c.RawConsume.Bytes)
			}
		}
	}
	if len(c.ProduceRounds) != 3 {
		t.Fatalf("%d produce rounds, want 3", len(c.ProduceRounds))
	}
	for _, rd := range c.ProduceRounds {
		if rd.RawProduce.Records != 200 || rd.AppendPath.Records != 200 || rd.RawProduceConsume.Records != 200 ||
			rd.RawProduce.PerSec > c.RawProduce.PerSec || rd.RawProduceConsume.PerSec > c.RawProduceConsume.PerSec || rd.AppendPath.PerSec > c.AppendPath.PerSec {
			t.Fatalf("a produce round beats the reported best, or wrote another count: %+v vs %+v", rd, c)
		}
	}
	// The produce side writes --ceiling-records again; the apply path
	// folds the whole log raw consume read (--apply-records, a million
	// by default, is more than it holds).
	if c.RawProduce.Records != 200 || c.AppendPath.Records != 200 || c.ApplyPath.Records != c.RawConsume.Records || c.ViewKeys == 0 || c.RawLatency == nil {
		t.Fatalf("ceilings: %+v", c)
	}
	// The lifecycle's floor: fdatasyncs at half of peak's upload rate,
	// and sums no shorter than any of their terms (within the buckets'
	// 1 %).
	if lf := c.LifecycleFloor; lf == nil || lf.KafkaTrips != lifecycleTrips || lf.Fdatasync.Count < 1 || lf.Floor.Count != floorDraws ||
		lf.Floor.P99 < 0.99*max(c.RawLatency.P99, lf.Fdatasync.P99) || lf.Floor.P50 < 0.99*max(c.RawLatency.P50, lf.Fdatasync.P50) {
		t.Fatalf("lifecycle floor: %+v, raw trip %+v", c.LifecycleFloor, c.RawLatency)
	}
	// Where the process's CPU is read, every consume-side ceiling has its
	// CPU, the raw consume the broker's too, and the floor is set from
	// them; without the copies the views hold fewer keys.
	if _, ok := processCPU(); ok {
		// Every document of the runs uploads, queues, runs and succeeds:
		// the fold takes at least four events of each of the documents it
		// sees, and refuses none of a clean log's.
		if c.Fold.Records != c.ApplyPath.Records || c.FoldedEvents < c.Fold.Records/3 || c.FoldedEvents > c.Fold.Records {
			t.Errorf("the fold took %d of %d records, the apply path folded %d", c.FoldedEvents, c.Fold.Records, c.ApplyPath.Records)
		}
		for name, r := range map[string]rate{"raw consume": c.RawConsume, "replay": c.Replay, "apply": c.ApplyPath, "decode": c.Decode, "fold": c.Fold,
			"raw Pebble": c.RawPebble, "raw Pebble without copies": c.RawPebbleNoCopies, "ingestion": c.RawIngest, "ingestion without copies": c.RawIngestNoCopies} {
			if r.CPU == nil || r.CPU.ProcessUs <= 0 {
				t.Errorf("%s: CPU %+v", name, r.CPU)
			}
		}
		if c.RawConsume.CPU != nil && c.RawConsume.CPU.BrokerUs == nil {
			t.Errorf("raw consume without the broker's CPU")
		}
		if c.RawPebbleNoCopies.Records <= 0 || c.RawPebbleNoCopies.Records >= c.RawPebble.Records ||
			c.RawIngest.Records != c.RawPebble.Records || c.RawIngestNoCopies.Records != c.RawPebbleNoCopies.Records {
			t.Errorf("view keys, with and without the history's copies: batches %d and %d, ingested %d and %d",
				c.RawPebble.Records, c.RawPebbleNoCopies.Records, c.RawIngest.Records, c.RawIngestNoCopies.Records)
		}
		// Whether the views cost less CPU without the copies is measured,
		// not given: on a run this small two writes of a few hundred keys
		// differ by noise (a run of the race suite once measured 12.6 µs
		// without them against 11.9 with). TestFloorAddsWhatEachPathMustDo
		// checks the sums.
		if f := c.Floor; f == nil || f.Cores != runtime.NumCPU() || !f.BrokerCounted || f.Replay.NeedUs <= f.Apply.NeedUs || f.Replay.Share <= 0 || f.Apply.ShareNoCopies <= 0 {
			t.Errorf("CPU floor: %+v", f)
		}
	}
	var names []string
	for _, r := range rep.Ratios {
		names = append(names, r.Name)
	}
	for _, want := range []string{"append path / raw produce", "replay (cold, offset 0) / raw consume", "lifecycle p99 at half of peak",
		"one hop: event appended -> applied p99", "bound: Avro decode alone", "bound: raw Pebble writes of the final views",
		"CPU floor: replay at 0.5", "CPU floor: apply at 0.3"} {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no ratio %q in %v", want, names)
		}
	}
	if rep.RSS == nil || len(rep.RSS.Samples) == 0 || rep.RSS.FirstMiB <= 0 {
		t.Errorf("memory samples: %+v", rep.RSS)
	} else if s := rep.RSS.Samples[len(rep.RSS.Samples)-1]; s.MemTablesMiB <= 0 || s.KeyFilterMiB <= 0 || s.BlockCacheMiB < 0 {
		t.Errorf("the views' memory is missing from the samples: %+v", s)
	}
	// Heap profiles of the open loop's baseline and end: gzipped protobufs.
	for _, suffix := range []string{"-base.pprof", "-end.pprof"} {
		if b, err := os.ReadFile(heap + suffix); err != nil || len(b) < 100 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("heap profile %s: %d bytes, %v", suffix, len(b), err)
		}
	}
}

// TestBenchApplyAgainstPebbleBound checks the apply path's row against
// the raw Pebble bound when the apply path folds a prefix of the log (at
// most --apply-records), as a run longer than that does: the row
// must compare events/s with events/s, not the whole log's view keys with
// the prefix's seconds.
func TestBenchApplyAgainstPebbleBound(t *testing.T) {
	t.Parallel()
	rep := &benchReport{Ceilings: &ceilings{
		RawConsume: rate{Records: 200_000, Seconds: 0.1, PerSec: 2_000_000},
		Replay:     rate{Records: 200_000, Seconds: 1, PerSec: 200_000},
		ApplyPath:  rate{Records: 50_000, Seconds: 0.5, PerSec: 100_000},
		RawPebble:  rate{Records: 400_000, Seconds: 0.4, PerSec: 1_000_000},
		ViewKeys:   400_000,
	}}
	rep.ratios()
	// 2 view keys an event: the bound is 500,000 events/s, a quarter of
	// raw consume, and the apply path's 100,000 events/s is 0.2 of it.
	want := map[string]float64{
		"bound: raw Pebble writes of the final views, events/s / raw consume": 0.25,
		"projection apply / that raw Pebble bound (events/s)":                 0.2,
		"projection apply / raw consume (records/s)":                          0.05,
	}
	for _, r := range rep.Ratios {
		if w, ok := want[r.Name]; ok {
			if math.Abs(r.Value-w) > 1e-9 {
				t.Errorf("%s = %v, want %v", r.Name, r.Value, w)
			}
			delete(want, r.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
}

// TestBenchKnowsHowItWasBuilt: the report's cgo flag must agree with the
// build tags this test binary was compiled under (CI's -race build links
// cgo, a CGO_ENABLED=0 build does not).
func TestBenchKnowsHowItWasBuilt(t *testing.T) {
	t.Parallel()
	if got := linksCgo(); got != builtWithCgo {
		t.Fatalf("linksCgo() = %v, build tags say %v", got, builtWithCgo)
	}
}

// TestBenchDecodesAsTheReaderDoes: the apply path's records carry their
// bytes, as the event store's reader returns them, so the history index
// stores them instead of encoding every event again (work the views'
// real path never does).
func TestBenchDecodesAsTheReaderDoes(t *testing.T) {
	t.Parallel()
	codec, err := eventstore.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 3 {
		val, err := codec.Encode(&domain.OrgCreated{Meta: eventstore.NewMeta("org", "actor", "corr"), Name: "org " + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Value: val, Offset: int64(i)})
	}
	out, events := decodeAll(codec, recs)
	if len(out) != len(recs) || len(events) != len(recs) {
		t.Fatalf("%d records, %d events of %d", len(out), len(events), len(recs))
	}
	for i, r := range out {
		if r.Err != nil || !bytes.Equal(r.Value, recs[i].Value) || r.Offset != int64(i) {
			t.Errorf("record %d: %+v, want its value and offset", i, r)
		}
	}
}

// TestLoadGetHoldsItsRate checks the GET generator sends at its fixed rate,
// with the key, and counts what the server answered.
func TestLoadGetHoldsItsRate(t *testing.T) {
	t.Parallel()
	var hits, authed atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The generator parses answers itself: every framing a server may use
	// must leave the connection ready for the next request.
	big := bytes.Repeat([]byte("x"), 64<<10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		if r.Header.Get("Authorization") == "Bearer k1" {
			authed.Add(1)
		}
		switch n % 10 {
		case 0:
			w.WriteHeader(http.StatusTooManyRequests)
		case 1: // chunked, with a trailer
			w.Header().Set("Trailer", "X-Sum")
			w.Write([]byte("first"))
			w.(http.Flusher).Flush()
			w.Write(big)
			w.Header().Set("X-Sum", "1")
		case 2:
			w.Header().Set("Connection", "close")
			w.Write([]byte(`{"ok":true}`))
		case 3: // a body larger than the reader's buffer, its length given
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Write(big)
		case 4: // a short body, its length set by the server
			w.Write([]byte(`{"id":"doc_1"}`))
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	var out bytes.Buffer
	if err := loadGet(context.Background(), "http://"+ln.Addr().String()+"/x", "k1", getLoad{perSec: 200, d: 500 * time.Millisecond, senders: 4, timeout: 10 * time.Second}, &out); err != nil {
		t.Fatal(err)
	}
	var r getResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Sent != 100 || hits.Load() != 100 || r.Latency.Count != 100 || r.Non2xx != 10 || r.Errors != 0 || authed.Load() != 100 ||
		r.CPUPerRequest == nil || *r.CPUPerRequest <= 0 {
		t.Fatalf("result %+v, server saw %d (%d with the key)", r, hits.Load(), authed.Load())
	}
}

// TestLoadGetReadsARealNode runs the generator against a node: every
// request must come back 200 with the whole document read, and a wrong
// key must show as non-2xx answers, not as errors.
func TestLoadGetReadsARealNode(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	d, code := tn.upload("gen", "a.txt", []byte("INVOICE 1\nwidget 2 x 3.00\n"), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	url := tn.url("/v1/documents/" + d.ID)
	for _, tc := range []struct {
		key        string
		ok, non2xx int
	}{{tn.key, 100, 0}, {"not-a-key", 0, 100}} {
		var out bytes.Buffer
		if err := loadGet(context.Background(), url, tc.key, getLoad{perSec: 200, d: 500 * time.Millisecond, senders: 8, timeout: 10 * time.Second}, &out); err != nil {
			t.Fatal(err)
		}
		var r getResult
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Sent != 100 || r.Errors != 0 || r.Latency.Count != 100 || r.Non2xx != tc.non2xx {
			t.Fatalf("key %q: %+v, want %d answered 2xx", tc.key, r, tc.ok)
		}
	}
}

// TestLoadGetTimesOut checks a server that never answers costs each
// request its timeout and counts as errors, without holding the run.
func TestLoadGetTimesOut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	var out bytes.Buffer
	start := time.Now()
	if err := loadGet(context.Background(), srv.URL+"/x", "k", getLoad{perSec: 100, d: 100 * time.Millisecond, senders: 4, timeout: 200 * time.Millisecond}, &out); err != nil {
		t.Fatal(err)
	}
	var r getResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	// Ten requests on four senders: three rounds of 200 ms at most.
	if r.Sent != 10 || r.Errors != 10 || r.Latency.Count != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("%+v after %s", r, time.Since(start))
	}
}

// TestHistQuantiles compares the histogram with exact quantiles.
func TestHistQuantiles(t *testing.T) {
	t.Parallel()
	var h hist
	var exact []time.Duration
	for range 20000 {
		d := time.Duration(rand.ExpFloat64() * float64(20*time.Millisecond))
		h.add(d)
		exact = append(exact, d)
	}
	slices.Sort(exact)
	for _, p := range []float64{50, 90, 99} {
		want := float64(exact[int(float64(len(exact))*p/100)-1]) / float64(time.Millisecond)
		if got := h.ms(p); got < want*0.99 || got > want*1.02 {
			t.Errorf("p%.0f = %.3f ms, exact %.3f ms", p, got, want)
		}
	}
	if h.ms(100) != float64(exact[len(exact)-1])/float64(time.Millisecond) || h.count() != 20000 {
		t.Errorf("max %.3f, count %d", h.ms(100), h.count())
	}
}

// TestBenchLeavesNothingBehind: the node is closed before its directory is
// removed. In the other order the embedded broker wrote its state again
// into a directory already removed, and every run left one behind in the
// temporary directory; against Kafka, a failed run's cleanup removed the
// views while Pebble was still compacting, which ended in a fatal
// "on-disk corruption" instead of the run's error.
func TestBenchLeavesNothingBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // not parallel: the environment is the process's
	blobs := t.TempDir()    // --blob-dir: the uploads go there, and go at the end
	f := benchFlags{brokers: os.Getenv(brokersEnv), workers: 2, webhooks: true, blobDir: blobs}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, cleanup, err := startBenchEnv(ctx, f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// One event through the node, so that the broker and the views have
	// written something.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "left.txt")
	_, _ = fw.Write(textInvoiceFor(1))
	_ = mw.Close()
	if err := e.c.call(ctx, "POST", "/v1/batches/left/documents", body.Bytes(), mw.FormDataContentType(), http.StatusCreated, nil); err != nil {
		cleanup()
		t.Fatal(err)
	}
	stored, err := filepath.Glob(filepath.Join(blobs, "docket-bench-blobs-*", "??", "*"))
	if err != nil || len(stored) != 1 {
		cleanup()
		t.Fatalf("the upload under --blob-dir: %v, %v", stored, err)
	}
	cleanup()
	for _, d := range []string{tmp, blobs} {
		left, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range left {
			t.Errorf("left behind in %s: %s", d, l.Name())
		}
	}
}

// TestBenchClientWaitsForLaggingViews: a batch that the views show only
// seconds after its upload was acknowledged (an open loop near saturation)
// is waited for, longer than the 2.3 s after which the client used to give
// up and fail the whole run. The server is a stand-in that answers 404 to
// the webhook registration for 3 s.
func TestBenchClientWaitsForLaggingViews(t *testing.T) {
	t.Parallel()
	visibleAt := time.Now().Add(3 * time.Second)
	var puts, processed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/documents"):
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"doc_1"}`)
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/webhook"):
			puts.Add(1)
			if time.Now().Before(visibleAt) {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/process"):
			processed.Add(1)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	c := newBenchClient(4)
	c.base, c.key, c.hookURL = srv.URL, "k", "http://127.0.0.1:1/hook"
	c.tr.Store(newTracker(true))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.batch(ctx, 1); err != nil {
		t.Fatalf("batch: %v (after %d registrations)", err, puts.Load())
	}
	if time.Now().Before(visibleAt) || puts.Load() < 2 || processed.Load() != 1 {
		t.Fatalf("registrations %d, process calls %d, done %v before the batch was visible", puts.Load(), processed.Load(), time.Until(visibleAt))
	}
}

// TestBenchClientKeepsItsConnections: the lifecycle's client parses answers
// itself (rawConn). It must read each framing a server may use, the body
// whole, keep one connection for calls made one after another, dial again
// after a server's Connection: close, and report 404 and other statuses as
// the bench expects.
func TestBenchClientKeepsItsConnections(t *testing.T) {
	t.Parallel()
	var conns, calls atomic.Int64
	big := strings.Repeat("x", 64<<10)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Content-Type") != "text/plain" || string(b) != "body "+strconv.FormatInt(n, 10) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch n {
		case 1: // chunked
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"doc_`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, big+`"}`)
		case 2: // its length given, then the server closes
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"doc_2"}`)
		case 3:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"gone"}`)
		case 4:
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "short and stout")
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"doc_n"}`)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newBenchClient(4)
	c.base, c.key = srv.URL, "k"
	defer c.closeIdle()
	ctx := context.Background()
	var doc struct {
		ID string `json:"id"`
	}
	call := func(n int, want int, out any) error {
		return c.call(ctx, "POST", "/x", []byte("body "+strconv.Itoa(n)), "text/plain", want, out)
	}
	if err := call(1, http.StatusCreated, &doc); err != nil || doc.ID != "doc_"+big {
		t.Fatalf("chunked answer: id of %d bytes, %v", len(doc.ID), err)
	}
	if err := call(2, http.StatusCreated, &doc); err != nil || doc.ID != "doc_2" {
		t.Fatalf("answer before a close: %q, %v", doc.ID, err)
	}
	if err := call(3, http.StatusCreated, nil); !errors.Is(err, errNotFound) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("a 404 gave %v, want errNotFound with the body", err)
	}
	if err := call(4, http.StatusCreated, nil); err == nil || !strings.Contains(err.Error(), "418 short and stout") {
		t.Fatalf("a 418 gave %v", err)
	}
	for n := 5; n <= 20; n++ {
		if err := call(n, http.StatusCreated, &doc); err != nil || doc.ID != "doc_n" {
			t.Fatalf("call %d: %q, %v", n, doc.ID, err)
		}
	}
	// One connection until the server closed it after call 2, one after.
	if conns.Load() != 2 || calls.Load() != 20 {
		t.Fatalf("%d calls over %d connections, want 20 over 2", calls.Load(), conns.Load())
	}
}
