package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// benchResult is what `docket bench` reports.
type benchResult struct {
	Mode        string  `json:"mode"`
	Documents   int     `json:"documents"`
	Concurrency int     `json:"concurrency,omitempty"`
	BatchSize   int     `json:"batch_size"`
	Rate        float64 `json:"rate,omitempty"`
	Seconds     float64 `json:"seconds"`
	DocsPerSec  float64 `json:"documents_per_second"`
	Succeeded   int     `json:"succeeded"`
	UploadP50ms float64 `json:"upload_p50_ms"`
	UploadP99ms float64 `json:"upload_p99_ms"`
	EndToEndP50 float64 `json:"upload_to_succeeded_p50_ms"`
	EndToEndP90 float64 `json:"upload_to_succeeded_p90_ms"`
	EndToEndP99 float64 `json:"upload_to_succeeded_p99_ms"`
	EndToEndMax float64 `json:"upload_to_succeeded_max_ms"`
	Broker      string  `json:"broker"`
	Hops        []hop   `json:"hops"`
	WorkerSlots int     `json:"worker_concurrency"`
	GoMaxProcs  int     `json:"gomaxprocs"`
}

// bench starts a node in-process (embedded broker unless --kafka-brokers is
// given), then drives upload -> process -> succeeded through the HTTP API on
// loopback, and measures with the views' own apply notifications (no
// polling): a document's latency ends when its DocumentSucceeded is applied.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	docs := fs.Int("documents", 2000, "documents to process")
	conc := fs.Int("concurrency", 32, "concurrent clients (closed loop); ignored with --rate")
	batchSize := fs.Int("batch-size", 1, "documents each client uploads into a batch before processing it")
	rate := fs.Float64("rate", 0, "documents per second to start (open loop); 0: closed loop")
	workers := fs.Int("worker-concurrency", 8, "worker slots of the node")
	brokers := fs.String("kafka-brokers", env("kafka-brokers", ""), "external Kafka brokers (default: embedded)")
	asJSON := fs.Bool("json", false, "print JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	dir, err := os.MkdirTemp("", "docket-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := Config{
		DataDir: dir, Listen: "127.0.0.1:0", BrokerListen: "127.0.0.1:0", KafkaBrokers: *brokers,
		TopicPrefix: "bench-" + eventstore.NewID(""), Partitions: 12, WorkerConcurrency: *workers,
		DocumentTimeout: time.Minute, MaxPages: 50, MaxUpload: 1 << 20, StatusRate: 120, Rate: 1 << 30, IPRate: 1 << 30, LogFormat: "json", LogLevel: "error",
	}
	tr := newTracker()
	n, err := startNodeWith(ctx, cfg, zerolog.New(stderr).Level(zerolog.ErrorLevel), projections.OnApplied(tr.applied))
	if err != nil {
		return err
	}
	defer n.close()
	key, err := os.ReadFile(filepath.Join(dir, "api-key"))
	if err != nil {
		return err
	}
	c := &benchClient{base: "http://" + n.httpAddr, key: strings.TrimSpace(string(key)), tr: tr,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: time.Minute}}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	if *batchSize < 1 || *docs%*batchSize != 0 {
		return usageError("--documents must be a multiple of --batch-size")
	}
	run := func(i int) {
		defer wg.Done()
		if err := c.batch(ctx, i, *batchSize); err != nil {
			select {
			case errs <- err:
			default:
			}
		}
	}
	if *rate > 0 {
		tick := time.NewTicker(time.Duration(float64(time.Second) * float64(*batchSize) / *rate))
		for i := 0; i < *docs; i += *batchSize {
			<-tick.C
			wg.Add(1)
			go run(i)
		}
		tick.Stop()
	} else {
		next := make(chan int)
		for range *conc {
			go func() {
				for i := range next {
					wg.Add(1)
					run(i)
				}
			}()
		}
		for i := 0; i < *docs; i += *batchSize {
			next <- i
		}
		close(next)
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	if err := tr.waitAll(ctx, *docs, 2*time.Minute); err != nil {
		return err
	}
	elapsed := tr.last().Sub(start)
	res := benchResult{
		Mode: "closed", Documents: *docs, Concurrency: *conc, BatchSize: *batchSize, Seconds: elapsed.Seconds(),
		DocsPerSec: float64(*docs) / elapsed.Seconds(), Succeeded: tr.succeeded(),
		Broker: "embedded", WorkerSlots: *workers, GoMaxProcs: runtimeProcs(),
	}
	if *rate > 0 {
		res.Mode, res.Rate, res.Concurrency = "open", *rate, 0
	}
	if *brokers != "" {
		res.Broker = *brokers
	}
	up, e2e := c.uploadLatencies(), tr.latencies()
	res.UploadP50ms, res.UploadP99ms = pct(up, 50), pct(up, 99)
	res.EndToEndP50, res.EndToEndP90, res.EndToEndP99, res.EndToEndMax = pct(e2e, 50), pct(e2e, 90), pct(e2e, 99), pct(e2e, 100)
	res.Hops = tr.hopStats()
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "mode=%s documents=%d succeeded=%d concurrency=%d batch_size=%d rate=%.0f broker=%s worker_slots=%d\n",
		res.Mode, res.Documents, res.Succeeded, res.Concurrency, res.BatchSize, res.Rate, res.Broker, res.WorkerSlots)
	fmt.Fprintf(stdout, "throughput: %.0f documents/s end to end (%.2f s)\n", res.DocsPerSec, res.Seconds)
	fmt.Fprintf(stdout, "upload -> succeeded: p50 %.1f ms  p90 %.1f ms  p99 %.1f ms  max %.1f ms\n", res.EndToEndP50, res.EndToEndP90, res.EndToEndP99, res.EndToEndMax)
	fmt.Fprintf(stdout, "upload request:      p50 %.1f ms  p99 %.1f ms\n", res.UploadP50ms, res.UploadP99ms)
	for _, h := range res.Hops {
		fmt.Fprintf(stdout, "  hop %-48s p50 %7.1f ms  p99 %7.1f ms\n", h.Name, h.P50, h.P99)
	}
	return nil
}

type benchClient struct {
	base, key string
	http      *http.Client
	tr        *latencyTracker
	mu        sync.Mutex
	uploads   []time.Duration
}

// batch uploads documents first..first+n-1 into one batch and processes it.
func (c *benchClient) batch(ctx context.Context, first, n int) error {
	name := fmt.Sprintf("bench-%d", first)
	for i := first; i < first+n; i++ {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", fmt.Sprintf("bench-%d.txt", i))
		_, _ = fw.Write(textInvoiceFor(i))
		_ = mw.Close()
		t0 := time.Now()
		var doc struct {
			ID string `json:"id"`
		}
		if err := c.call(ctx, "POST", "/v1/batches/"+name+"/documents", &buf, mw.FormDataContentType(), http.StatusCreated, &doc); err != nil {
			return err
		}
		c.tr.started(doc.ID, t0)
		c.mu.Lock()
		c.uploads = append(c.uploads, time.Since(t0))
		c.mu.Unlock()
	}
	return c.call(ctx, "POST", "/v1/batches/"+name+"/process", nil, "", http.StatusAccepted, nil)
}

func (c *benchClient) call(ctx context.Context, method, path string, body io.Reader, ct string, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("bench: %s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func (c *benchClient) uploadLatencies() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.uploads)
}

// latencyTracker matches DocumentSucceeded applications to upload times.
type latencyTracker struct {
	mu      sync.Mutex
	start   map[string]time.Time
	done    map[string]time.Time
	lat     []time.Duration
	lastAt  time.Time
	changed chan struct{}

	// Event times per document, for the per-hop breakdown.
	queuedAt, claimedAt map[string]time.Time
	hops                map[string][]time.Duration
}

func newTracker() *latencyTracker {
	return &latencyTracker{
		start: map[string]time.Time{}, done: map[string]time.Time{}, changed: make(chan struct{}, 1),
		queuedAt: map[string]time.Time{}, claimedAt: map[string]time.Time{}, hops: map[string][]time.Duration{},
	}
}

func (t *latencyTracker) started(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, ok := t.done[id]; ok { // finished before the upload call returned
		t.lat = append(t.lat, d.Sub(at))
		return
	}
	t.start[id] = at
}

func (t *latencyTracker) applied(recs []eventstore.Record) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range recs {
		switch ev := r.Event.(type) {
		case *domain.DocumentQueued:
			t.queuedAt[ev.DocumentID] = ev.Meta.OccurredAt
			t.hops["process request -> queued applied"] = append(t.hops["process request -> queued applied"], now.Sub(ev.Meta.OccurredAt))
		case *domain.ProcessingStarted:
			t.claimedAt[ev.DocumentID] = ev.Meta.OccurredAt
			if q, ok := t.queuedAt[ev.DocumentID]; ok {
				t.hops["queued -> claimed (dispatch, work topic, worker)"] = append(t.hops["queued -> claimed (dispatch, work topic, worker)"], ev.Meta.OccurredAt.Sub(q))
			}
		}
		if ev, ok := r.Event.(*domain.DocumentSucceeded); ok {
			if c, ok := t.claimedAt[ev.DocumentID]; ok {
				t.hops["claimed -> result appended (processing)"] = append(t.hops["claimed -> result appended (processing)"], ev.Meta.OccurredAt.Sub(c))
			}
			t.hops["result -> applied to views"] = append(t.hops["result -> applied to views"], now.Sub(ev.Meta.OccurredAt))
			t.lastAt = now
			if s, ok := t.start[ev.DocumentID]; ok {
				t.lat = append(t.lat, now.Sub(s))
				delete(t.start, ev.DocumentID)
			} else {
				t.done[ev.DocumentID] = now
			}
		}
	}
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (t *latencyTracker) succeeded() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lat)
}

func (t *latencyTracker) last() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastAt
}

func (t *latencyTracker) latencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.lat)
}

func (t *latencyTracker) waitAll(ctx context.Context, n int, limit time.Duration) error {
	deadline := time.After(limit)
	for t.succeeded() < n {
		select {
		case <-t.changed:
		case <-deadline:
			return fmt.Errorf("bench: only %d of %d documents succeeded in %s", t.succeeded(), n, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func pct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds)-1) * p / 100)
	return float64(ds[i].Microseconds()) / 1000
}

// textInvoiceFor is the small plain-text invoice the benchmark uploads.
func textInvoiceFor(i int) []byte {
	return fmt.Appendf(nil, "INVOICE #%d\nBill to: Bench Co\n\nDescription          Qty   Unit Price   Amount\nWidget model %d        2      %d.50      %d.00\nService fee            1      10.00      10.00\n\nTotal: %d.00 USD\n",
		i, i, 10+i, 2*(10+i)+1, 2*(10+i)+11)
}

type hop struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
}

func (t *latencyTracker) hopStats() []hop {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []hop
	for name, ds := range t.hops {
		out = append(out, hop{Name: name, P50: pct(ds, 50), P99: pct(ds, 99)})
	}
	slices.SortFunc(out, func(a, b hop) int { return strings.Compare(a.Name, b.Name) })
	return out
}
