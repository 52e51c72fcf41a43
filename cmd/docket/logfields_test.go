package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockedBuffer collects log output written from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// wrote, if made, gets a token after each write (dropped when one
	// waits already), for a test to wait on.
	wrote chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	if l.wrote != nil {
		select {
		case l.wrote <- struct{}{}:
		default:
		}
	}
	return n, err
}

// lines parses every JSON log line so far.
func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// setupLogged starts a node like setup, logging JSON at info level into buf.
func setupLogged(t *testing.T, buf *lockedBuffer, opts ...nodeOpt) *testNode {
	t.Helper()
	cfg := testConfig(t)
	cfg.LogLevel, cfg.WebhookAllowLoopback = "info", true
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := startNode(ctx, cfg, newLogger("json", "info", buf))
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	tn := &testNode{t: t, cfg: cfg, n: n}
	t.Cleanup(tn.stop)
	key, err := os.ReadFile(filepath.Join(cfg.DataDir, "api-key"))
	if err != nil {
		t.Fatal(err)
	}
	tn.key = strings.TrimSpace(string(key))
	return tn
}

// TestLogLinesCarryIDs checks that the lines about a request carry its
// request id and org, and the ids of the document, batch and job it
// concerns; and that the worker's lines about a document carry its org and
// document id. The API key itself never appears in the log.
func TestLogLinesCarryIDs(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	tn := setupLogged(t, &buf)

	var delivered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { delivered.Add(1) }))
	defer srv.Close()
	ep, _ := json.Marshal(map[string]any{"url": srv.URL, "events": []string{"document.processing_failed"}})
	var endpoint struct {
		ID string `json:"id"`
	}
	if code := tn.do("POST", "/v1/webhook-endpoints", bytes.NewReader(ep), "application/json", nil, &endpoint); code != http.StatusCreated {
		t.Fatalf("create endpoint: %d", code)
	}

	body, ct := multipartBody(t, "broken.bin", []byte{0, 1, 2, 3, 0xff}, "")
	var doc docView
	if code := tn.do("POST", "/v1/batches/logged/documents", body, ct, map[string]string{"X-Request-Id": "req-log-upload"}, &doc); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	var job struct {
		JobID string `json:"jobId"`
	}
	req, _ := json.Marshal(map[string]any{"documentIds": []string{doc.ID}})
	if code := tn.do("POST", "/v1/documents/process", bytes.NewReader(req), "application/json", map[string]string{"X-Request-Id": "req-log-process"}, &job); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	if code := tn.do("GET", "/v1/jobs/"+job.JobID, nil, "", map[string]string{"X-Request-Id": "req-log-job"}, nil); code != http.StatusOK {
		t.Fatalf("get job: %d", code)
	}
	if code := tn.do("GET", "/v1/documents/"+doc.ID, nil, "", map[string]string{"X-Request-Id": "req-log-doc"}, nil); code != http.StatusOK {
		t.Fatalf("get document: %d", code)
	}
	// The document is not a supported format: the worker fails it and says so.
	tn.waitFor(func() bool {
		var d docView
		tn.get("/v1/documents/"+doc.ID, &d)
		return d.Status == "failed"
	})

	tn.waitFor(func() bool { return delivered.Load() > 0 })
	var hookLine map[string]any
	tn.waitFor(func() bool {
		for _, l := range buf.lines(t) {
			if l["message"] == "webhook attempt" {
				hookLine = l
			}
		}
		return hookLine != nil
	})

	byRequest := map[string]map[string]any{}
	var workerLine, processedLine map[string]any
	owned := map[float64]bool{}
	for _, l := range buf.lines(t) {
		if l["message"] == "duties: partitions assigned" {
			ps, _ := l["partitions"].([]any)
			for _, p := range ps {
				f, _ := p.(float64)
				owned[f] = true
			}
		}
		if rid, ok := l["request_id"].(string); ok && l["message"] == "request" {
			byRequest[rid] = l
		}
		if l["message"] == "document failed" && l["document"] == doc.ID {
			workerLine = l
		}
		if l["message"] == "document processed" && l["document"] == doc.ID {
			processedLine = l
		}
	}
	want := map[string]map[string]string{
		"req-log-upload":  {"org": "org_default", "document": doc.ID, "batch": "logged", "route": "/v1/batches/{batch_name}/documents"},
		"req-log-process": {"org": "org_default", "route": "/v1/documents/process"},
		"req-log-job":     {"org": "org_default", "route": "/v1/jobs/{jobId}"},
		"req-log-doc":     {"org": "org_default", "document": doc.ID, "route": "/v1/documents/{id}"},
	}
	for rid, fields := range want {
		l := byRequest[rid]
		if l == nil {
			t.Errorf("no access log line for %s", rid)
			continue
		}
		for k, v := range fields {
			if l[k] != v {
				t.Errorf("%s: %s = %v, want %q", rid, k, l[k], v)
			}
		}
	}
	// The job's own id (not its handle) names it on both job requests.
	jobID, _ := byRequest["req-log-process"]["job"].(string)
	if !strings.HasPrefix(jobID, "job_") || byRequest["req-log-job"]["job"] != jobID || strings.Contains(jobID, job.JobID) {
		t.Errorf("job ids on the log lines: process %v, get %v", byRequest["req-log-process"]["job"], byRequest["req-log-job"]["job"])
	}
	if workerLine == nil || workerLine["org"] != "org_default" || workerLine["code"] == nil {
		t.Errorf("worker line about the failed document: %v", workerLine)
	}
	if processedLine == nil || processedLine["org"] != "org_default" || processedLine["outcome"] != "failed" || processedLine["phase"] != "preprocess" {
		t.Errorf("worker line about the finished run: %v", processedLine)
	}
	// The only node owns every partition of the events topic, and said so
	// before it delivered.
	if len(owned) != int(tn.cfg.Partitions) {
		t.Errorf("duties: partitions assigned lines name %v, want all %d partitions", owned, tn.cfg.Partitions)
	}
	for k, v := range map[string]any{"org": "org_default", "document": doc.ID, "endpoint": endpoint.ID, "event": "document.processing_failed", "outcome": "delivered"} {
		if hookLine[k] != v {
			t.Errorf("webhook attempt line: %s = %v, want %v (line %v)", k, hookLine[k], v, hookLine)
		}
	}
	buf.mu.Lock()
	leaked := strings.Contains(buf.b.String(), tn.key)
	buf.mu.Unlock()
	if leaked {
		t.Error("the API key appears in the log")
	}
}

// TestConsoleLogFormat: --log-format console writes lines for humans, with
// the same fields.
func TestConsoleLogFormat(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	l := newLogger("console", "info", &b)
	l.Info().Str("request_id", "req-human").Str("org", "org_a").Msg("request")
	l.Debug().Msg("below the level")
	out := b.String()
	if strings.HasPrefix(out, "{") || json.Valid(b.Bytes()) || strings.Count(out, "\n") != 1 ||
		!strings.Contains(out, "req-human") || !strings.Contains(out, "org_a") || !strings.Contains(out, "request") {
		t.Fatalf("console line: %q", out)
	}
}

// TestBlobJournalRemovalIsLogged: a node whose blob journal is removed
// from under it says so in its log, with the cause, and that the blobs
// the journal held were made durable on their own.
func TestBlobJournalRemovalIsLogged(t *testing.T) {
	t.Parallel()
	buf := lockedBuffer{wrote: make(chan struct{}, 1)}
	// The filesystem store, also when the suite keeps documents in S3.
	tn := setupLogged(t, &buf, func(c *Config) { c.BlobStore, c.S3Endpoint = "", "" })
	body, ct := multipartBody(t, "a.txt", textInvoice(1), "ref-1")
	tn.call("POST", "/v1/batches/journal/documents", "Bearer "+tn.key, body, ct, nil).decode(t, http.StatusCreated, &docView{})
	if err := os.RemoveAll(filepath.Join(tn.cfg.blobDir(), "tmp")); err != nil {
		t.Fatal(err)
	}
	// The journal's watch looks every second.
	var failed, rescued map[string]any
	timeout := time.After(30 * time.Second)
	for failed == nil || rescued == nil {
		select {
		case <-buf.wrote:
		case <-timeout:
			t.Fatalf("30 s after the removal the log holds no failure and rescue: %v", buf.lines(t))
		}
		for _, l := range buf.lines(t) {
			msg, _ := l["message"].(string)
			switch {
			case l["level"] == "error" && strings.HasPrefix(msg, "blob journal failed"):
				failed = l
			case l["level"] == "warn" && strings.HasPrefix(msg, "blob journal removed: the blobs it held are durable"):
				rescued = l
			}
		}
	}
	if e, _ := failed["error"].(string); !strings.Contains(e, "removed from under the store") {
		t.Fatalf("the failure's line gives no cause: %v", failed)
	}
}
