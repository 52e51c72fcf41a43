package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape reads the node's /metrics.
func (tn *testNode) scrape() map[string]*dto.MetricFamily {
	tn.t.Helper()
	return scrapeURL(tn.t, tn.url("/metrics"))
}

// scrapeURL reads a metrics page and parses it with Prometheus' own text
// parser.
func scrapeURL(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// checkWorkerMetrics checks a worker-only node's metrics after it processed
// n documents: its runs and appends are there, and nothing that needs views.
func checkWorkerMetrics(t *testing.T, url string, n float64) {
	t.Helper()
	fams := scrapeURL(t, url)
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"docket_processing_duration_seconds", map[string]string{"outcome": "succeeded"}},
		{"docket_events_appended_total", map[string]string{"type": "DocumentSucceeded"}},
	} {
		if v, _ := metricValue(fams, c.name, c.labels); v != n {
			t.Errorf("worker %s%v = %v, want %v", c.name, c.labels, v, n)
		}
	}
	if v, _ := metricValue(fams, "docket_broker_up", nil); v != 1 {
		t.Errorf("worker docket_broker_up = %v", v)
	}
	for _, name := range []string{"docket_documents", "docket_projection_lag", "docket_http_requests_total", "docket_views_memory_bytes"} {
		if _, found := metricValue(fams, name, nil); found {
			t.Errorf("worker-only node reports %s", name)
		}
	}
}

// metricValue sums the samples of a family whose labels include want
// (counter, gauge, or a histogram's sample count); found is false when no
// sample matched.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, found bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if labels[k] != w {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Histogram != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v, found
}

func TestMetricsMoveWithRealWork(t *testing.T) {
	t.Parallel()
	var hooks atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hooks.Add(1)
	}))
	defer srv.Close()
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback = true })
	before := tn.scrape()
	if v, _ := metricValue(before, "docket_events_appended_total", map[string]string{"type": "DocumentUploaded"}); v != 0 {
		t.Fatalf("uploads counted before any upload: %v", v)
	}
	for i := range 3 {
		if _, code := tn.upload("metered", "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	body, _ := json.Marshal(map[string]string{"url": srv.URL})
	if code := tn.do("PUT", "/v1/batches/metered/webhook", bytes.NewReader(body), "application/json", nil, nil); code != http.StatusOK {
		t.Fatalf("PUT webhook: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/metered/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	tn.waitBatch("metered", func(b batchView) bool { return b.AllDone && b.Counts["succeeded"] == 3 })
	tn.waitWorkDrained()
	tn.waitFor(func() bool {
		v, _ := metricValue(tn.scrape(), "docket_webhook_attempts_total", map[string]string{"outcome": "delivered"})
		return v == 1
	})

	after := tn.scrape()
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"docket_events_appended_total", map[string]string{"type": "DocumentUploaded"}, 3},
		{"docket_events_appended_total", map[string]string{"type": "DocumentSucceeded"}, 3},
		{"docket_events_applied_total", map[string]string{"type": "DocumentQueued"}, 3},
		{"docket_documents", map[string]string{"status": "succeeded"}, 3},
		{"docket_processing_duration_seconds", map[string]string{"outcome": "succeeded"}, 3},
		{"docket_document_end_to_end_seconds", map[string]string{"outcome": "succeeded"}, 3},
		{"docket_http_requests_total", map[string]string{"route": "/v1/batches/{batch_name}/documents", "method": "POST", "status": "201"}, 3},
		{"docket_http_requests_total", map[string]string{"route": "/v1/batches/{batch_name}/process", "status": "202"}, 1},
		{"docket_webhook_attempts_total", map[string]string{"outcome": "delivered"}, 1},
		{"docket_work_queue_depth", nil, 0},
		{"docket_projection_lag", map[string]string{"projection": "views"}, 0},
		{"docket_broker_up", nil, 1},
	}
	for _, c := range checks {
		got, found := metricValue(after, c.name, c.labels)
		if !found || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, found, c.want)
		}
	}
	// The views wrote keys and hold a memtable; the block cache may still
	// be empty (nothing flushed yet), but it is reported.
	for part, positive := range map[string]bool{"memtables": true, "key_filter": true, "block_cache": false} {
		got, found := metricValue(after, "docket_views_memory_bytes", map[string]string{"part": part})
		if !found || got < 0 || positive && got == 0 {
			t.Errorf("docket_views_memory_bytes{part=%q} = %v (found %v)", part, got, found)
		}
	}
	// Three small uploads, each with its own record, took one to three
	// fdatasyncs of the filesystem store's blob journal. An S3 store (the
	// real-Kafka suite's) has no journal, and no such series.
	journaled, found := metricValue(after, "docket_blob_journal_records_total", nil)
	syncs, _ := metricValue(after, "docket_blob_journal_syncs_total", nil)
	if tn.cfg.BlobStore == "" && (journaled != 3 || syncs < 1 || syncs > 3) {
		t.Errorf("docket_blob_journal records %v, syncs %v; want 3 records in 1 to 3 syncs", journaled, syncs)
	}
	if tn.cfg.BlobStore != "" && found {
		t.Errorf("an S3 store reports docket_blob_journal_records_total = %v", journaled)
	}
	if failed, found := metricValue(after, "docket_blob_journal_failed", nil); tn.cfg.BlobStore == "" && (!found || failed != 0) {
		t.Errorf("docket_blob_journal_failed = %v (found %v) on a working journal", failed, found)
	}
	// A status no document is in has no series.
	if v, found := metricValue(after, "docket_documents", map[string]string{"status": "queued"}); found {
		t.Errorf("docket_documents{status=queued} = %v, want no series", v)
	}
	if hooks.Load() != 1 {
		t.Errorf("receiver got %d deliveries, want 1", hooks.Load())
	}
	// Kafka requests: each counted once, so never more Produce requests
	// than records produced (every event this node appended, and a work
	// item per document); and the views and the worker fetched.
	delta := func(name string, labels map[string]string) float64 {
		a, _ := metricValue(after, name, labels)
		b, _ := metricValue(before, name, labels)
		return a - b
	}
	records := delta("docket_events_appended_total", nil) + 3
	if produce := delta("docket_kafka_requests_total", map[string]string{"api": "Produce"}); produce < 1 || produce > records {
		t.Errorf("Produce requests = %v for %v records, want 1..%v", produce, records, records)
	}
	if fetch := delta("docket_kafka_requests_total", map[string]string{"api": "Fetch"}); fetch < 2 {
		t.Errorf("Fetch requests = %v, want the views' and the worker's", fetch)
	}
	// Lag and queue depth are reported for every partition, not only busy ones.
	for _, name := range []string{"docket_projection_lag", "docket_work_queue_depth"} {
		if n := len(after[name].GetMetric()); n != tn.cfg.Partitions {
			t.Errorf("%s: %d series, want one per partition (%d)", name, n, tn.cfg.Partitions)
		}
	}
	// Raw paths never become labels: an unknown document id is counted
	// under its route template.
	tn.get("/v1/documents/doc_nope", nil)
	if v, _ := metricValue(tn.scrape(), "docket_http_requests_total", map[string]string{"route": "/v1/documents/{id}", "status": "404"}); v != 1 {
		t.Errorf("404 by route template = %v, want 1", v)
	}
}

func TestMetricsCountRateLimitRejections(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.StatusRate = 1 })
	codes := map[int]int{}
	for range 3 {
		codes[tn.get("/v1/documents/doc_nope", nil)]++
	}
	if codes[http.StatusTooManyRequests] != 2 {
		t.Fatalf("statuses %v, want two 429s", codes)
	}
	fams := tn.scrape()
	if v, _ := metricValue(fams, "docket_rate_limit_rejections_total", map[string]string{"limit": "status"}); v != 2 {
		t.Errorf("status rejections = %v, want 2", v)
	}
	if v, _ := metricValue(fams, "docket_http_requests_total", map[string]string{"route": "/v1/documents/{id}", "status": "429"}); v != 2 {
		t.Errorf("429 requests = %v, want 2", v)
	}
}
