package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/docket/docket/projections"
)

// Namespace prefixes every docket series.
const Namespace = "docket"

// latencyBuckets span a fast text document (a few ms) to the default
// document timeout (2 min).
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Metrics holds one node's registry and the series the hooks feed. Its
// methods are safe for concurrent use; a nil *Metrics ignores every call,
// so components may be run without metrics.
type Metrics struct {
	reg *prometheus.Registry

	appended    *prometheus.CounterVec
	httpReqs    *prometheus.CounterVec
	httpTook    *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
	webhooks    *prometheus.CounterVec
	processing  *prometheus.HistogramVec
	endToEnd    *prometheus.HistogramVec
	applied     *prometheus.CounterVec
	kafka       *kafkaRequests
	// redispatched counts documents dispatched again after their items
	// were deleted unread, by the work topic's retention or with the topic
	// (projections/lostwork.go).
	redispatched prometheus.Counter

	started time.Time                         // Applied skips runs that ended before
	views   atomic.Pointer[projections.Views] // set by Watch
}

// New makes a registry with docket's series and the Go runtime and process
// collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(), started: time.Now(), kafka: &kafkaRequests{},
		appended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "events_appended_total",
			Help: "Events this node appended to the log and had acknowledged, by event type.",
		}, []string{"type"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "events_applied_total",
			Help: "Events this node's views applied, by event type.",
		}, []string{"type"}),
		httpReqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		httpTook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request (for event streams: the stream's life), by route template and method.",
			Buckets: latencyBuckets,
		}, []string{"route", "method"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "rate_limit_rejections_total",
			Help: "Requests refused with 429, by limit (general or status).",
		}, []string{"limit"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "webhook_attempts_total",
			Help: "Webhook delivery attempts this node made, by outcome (delivered, retry, gone, refused).",
		}, []string{"outcome"}),
		processing: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "processing_duration_seconds",
			Help:    "Time a worker spent on one processing run, by work phase and outcome.",
			Buckets: latencyBuckets,
		}, []string{"phase", "outcome"}),
		endToEnd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "document_end_to_end_seconds",
			Help:    "From upload (first run) or queueing (later runs) to the run's end, as the views saw it, by outcome.",
			Buckets: latencyBuckets,
		}, []string{"outcome"}),
		redispatched: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "work_redispatched_total",
			Help: "Queued documents this node dispatched again because their work items were deleted before a worker read them (the work topic's retention, or the topic deleted and created again).",
		}),
	}
	m.reg.MustRegister(m.appended, m.applied, m.httpReqs, m.httpTook, m.rateLimited, m.webhooks, m.processing, m.endToEnd, m.kafka, m.redispatched,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the node's registry, for extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Appended counts one acknowledged append (eventstore.OnAppend).
func (m *Metrics) Appended(eventType string) {
	if m != nil {
		m.appended.WithLabelValues(eventType).Inc()
	}
}

// HTTPRequest counts one answered request. route is the matched route
// template ("unmatched" for 404s of unknown paths), never the raw path, so
// ids do not explode the series.
func (m *Metrics) HTTPRequest(route, method string, status int, took time.Duration) {
	if m == nil {
		return
	}
	m.httpReqs.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpTook.WithLabelValues(route, method).Observe(took.Seconds())
}

// RateLimited counts one 429 of the named limit.
func (m *Metrics) RateLimited(limit string) {
	if m != nil {
		m.rateLimited.WithLabelValues(limit).Inc()
	}
}

// WebhookAttempt counts one delivery attempt by outcome.
func (m *Metrics) WebhookAttempt(outcome string) {
	if m != nil {
		m.webhooks.WithLabelValues(outcome).Inc()
	}
}

// Redispatched counts documents dispatched again after their work items
// were lost (projections.Dispatcher.OnRedispatch).
func (m *Metrics) Redispatched(documents int) {
	if m != nil {
		m.redispatched.Add(float64(documents))
	}
}

// Processed records one worker run (worker.Observe).
func (m *Metrics) Processed(phase, outcome string, took time.Duration) {
	if m != nil {
		m.processing.WithLabelValues(phase, outcome).Observe(took.Seconds())
	}
}
