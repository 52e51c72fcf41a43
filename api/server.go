package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// Config holds the API's settings. The zero value of each field means its
// documented default; Validate fills them in.
type Config struct {
	// MaxUpload is the largest accepted document, in bytes. Default 25 MiB.
	MaxUpload int64
	// StatusRate is how many status requests (GET batch, GET document) an org
	// may make per minute on one node. Default 120.
	StatusRate int
	// Rate is how many requests of any kind an org may make per minute on
	// one node; the status limit applies on top. Default 1200.
	Rate int
	// WriteWait bounds how long a write waits for its own events to be
	// applied before answering from the event itself. Default 10 s.
	WriteWait time.Duration
	// Handles signs and verifies job handles and session ids. Required for
	// the jobs surface; no default.
	Handles *Signer
	// HandleTTL is how long a handle stays valid. Default 30 days.
	HandleTTL time.Duration
	// StallAfter marks an unfinished job stalled when nothing moved for
	// longer. Default 5 minutes.
	StallAfter time.Duration
	// WebhookAllowPrivate and WebhookAllowLoopback relax the registration
	// check of webhook URLs (delivery checks again). Default false.
	WebhookAllowPrivate, WebhookAllowLoopback bool
	// ReadyMaxLag is how many events the views may trail the log on any
	// partition before /readyz answers 503. Default 10000.
	ReadyMaxLag int64
	// IPRate is how many /v1 requests one client address may make per
	// minute on one node, checked before authentication. Default 3000.
	IPRate int
	// BodyIdleTimeout is how long a request body may stall between reads
	// (408 after). Default 30 s.
	BodyIdleTimeout time.Duration
	// BodyTimeout bounds the whole body's arrival from the request's start.
	// Default 5 minutes.
	BodyTimeout time.Duration
	// AppendTimeout bounds how long a write waits for the log to
	// acknowledge its events before answering 503 (outcome unknown: the
	// producer may still write them). Longer than a Kafka leader
	// election, so a broker failover does not cost writes. Default 30 s.
	AppendTimeout time.Duration
	// PageSize is the default page length of listings. Default 50; at most
	// MaxPageSize (1000).
	PageSize int
	// Observer counts requests and rate-limit rejections. Default: none.
	Observer Observer
	// Metrics serves GET /metrics. Default: none (404).
	Metrics http.Handler
}

// MaxPageSize caps the limit parameter of every listing.
const MaxPageSize = 1000

// Validate fills defaults and rejects impossible settings.
func (c *Config) Validate() error {
	if c.MaxUpload == 0 {
		c.MaxUpload = blobstore.DefaultMaxSize
	}
	if c.StatusRate == 0 {
		c.StatusRate = 120
	}
	if c.Rate == 0 {
		c.Rate = 1200
	}
	if c.AppendTimeout == 0 {
		c.AppendTimeout = 30 * time.Second
	}
	if c.IPRate == 0 {
		c.IPRate = 3000
	}
	if c.BodyIdleTimeout == 0 {
		c.BodyIdleTimeout = 30 * time.Second
	}
	if c.BodyTimeout == 0 {
		c.BodyTimeout = 5 * time.Minute
	}
	if c.WriteWait == 0 {
		c.WriteWait = 10 * time.Second
	}
	if c.ReadyMaxLag == 0 {
		c.ReadyMaxLag = 10000
	}
	if c.PageSize == 0 {
		c.PageSize = 50
	}
	if c.HandleTTL == 0 {
		c.HandleTTL = 30 * 24 * time.Hour
	}
	if c.StallAfter == 0 {
		c.StallAfter = 5 * time.Minute
	}
	switch {
	case c.MaxUpload < 0:
		return errorf("MaxUpload must be positive")
	case c.StatusRate < 0 || c.Rate < 0 || c.IPRate < 0:
		return errorf("StatusRate, Rate and IPRate must be positive")
	case c.BodyIdleTimeout < 0 || c.BodyTimeout < 0:
		return errorf("BodyIdleTimeout and BodyTimeout must be positive")
	case c.PageSize < 0 || c.PageSize > MaxPageSize:
		return errorf("PageSize must be between 1 and %d", MaxPageSize)
	}
	return nil
}

// Server serves the HTTP API.
type Server struct {
	cfg     Config
	views   *projections.Views
	store   *eventstore.Store
	blobs   blobstore.Store
	log     zerolog.Logger
	limits  *limiter // status endpoints
	general *limiter // every authenticated call
	byIP    *limiter // every /v1 call, per client address
	probe   *brokerProbe
	ready   func(context.Context) error
	// asOf is set on the copies that answer a time-travel request (at).
	asOf time.Time
}

// New builds a server. ready reports whether the node can serve (/readyz).
func New(cfg Config, views *projections.Views, store *eventstore.Store, blobs blobstore.Store, log zerolog.Logger, ready func(context.Context) error) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var probe *brokerProbe
	if store != nil {
		probe = &brokerProbe{checks: store.Client().Ping}
	}
	return &Server{probe: probe,
		cfg: cfg, views: views, store: store, blobs: blobs, log: log,
		limits: newLimiter(cfg.StatusRate, time.Minute), general: newLimiter(cfg.Rate, time.Minute),
		byIP: newLimiter(cfg.IPRate, time.Minute), ready: ready,
	}, nil
}

// Handler returns the routed handler with its middleware.
func (s *Server) Handler() http.Handler {
	// SkipClean: a path with dot segments is answered as it is (404 or
	// 400), not redirected to another resource.
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeError(w, r, ErrNotFound) })
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeError(w, r, ErrMethodNotAllowed) })
	r.HandleFunc("/healthz", s.healthz).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet)
	r.HandleFunc("/openapi.json", serveOpenAPI).Methods(http.MethodGet)
	r.HandleFunc("/metrics", s.metricsHandler).Methods(http.MethodGet)
	r.HandleFunc("/console", s.serveConsole).Methods(http.MethodGet)
	r.HandleFunc("/console/{asset}", s.serveConsole).Methods(http.MethodGet)
	r.Use(nameRoute)

	// The /v1 routes live on the main router, each behind authenticate: in
	// a mux subrouter the inherited /v1 prefix matcher of a later route
	// clears an earlier route's method mismatch, turning 405 into 404.
	v1 := func(method, path string, h http.HandlerFunc) {
		r.Handle("/v1"+path, s.perIP(s.authenticate(s.limitedBy(s.general, s.writable(h))))).Methods(method)
	}
	v1(http.MethodGet, "/batches", s.listBatches)
	v1(http.MethodGet, "/batches/{batch_name}", s.limited(s.getBatch))
	v1(http.MethodDelete, "/batches/{batch_name}", s.deleteBatch)
	v1(http.MethodPost, "/batches/{batch_name}/documents", s.uploadToBatch)
	v1(http.MethodPost, "/batches/{batch_name}/process", s.processBatch)
	v1(http.MethodGet, "/batches/{batch_name}/results", s.batchResults)
	v1(http.MethodGet, "/batches/{batch_name}/events", s.limited(s.batchEvents))
	v1(http.MethodGet, "/documents/{id}", s.limited(s.getDocument))
	v1(http.MethodPut, "/batches/{batch_name}/webhook", s.putBatchWebhook)
	v1(http.MethodGet, "/batches/{batch_name}/webhook", s.getBatchWebhook)
	v1(http.MethodDelete, "/batches/{batch_name}/webhook", s.deleteBatchWebhook)
	v1(http.MethodGet, "/batches/{batch_name}/webhook/deliveries", s.batchDeliveries)
	v1(http.MethodPost, "/webhook-endpoints", s.createEndpoint)
	v1(http.MethodGet, "/webhook-endpoints", s.listEndpoints)
	v1(http.MethodGet, "/webhook-endpoints/{id}", s.getEndpoint)
	v1(http.MethodDelete, "/webhook-endpoints/{id}", s.deleteEndpoint)
	v1(http.MethodGet, "/webhook-endpoints/{id}/deliveries", s.endpointDeliveries)
	v1(http.MethodPost, "/webhook-endpoints/{id}/deliveries/{notification_id}/retry", s.redeliverEndpoint)
	v1(http.MethodPost, "/batches/{batch_name}/webhook/deliveries/{notification_id}/retry", s.redeliverBatch)
	// The jobs surface (spec/jobs.md).
	v1(http.MethodPost, "/documents", s.uploadDocument)
	v1(http.MethodPost, "/documents/process", s.processDocuments)
	v1(http.MethodPost, "/extraction-sessions", s.createSession)
	v1(http.MethodGet, "/extraction-sessions/{sessionId}/results", s.sessionResults)
	v1(http.MethodGet, "/jobs/{jobId}", s.limited(s.getJob))
	v1(http.MethodPost, "/jobs/{jobId}/cancel", s.cancelJob)
	v1(http.MethodGet, "/jobs/{jobId}/events", s.limited(s.jobEvents))
	// Event history (history.go) and the public event schemas (schemas.go).
	v1(http.MethodGet, "/documents/{id}/history", s.documentHistory)
	v1(http.MethodGet, "/batches/{batch_name}/history", s.batchHistory)
	v1(http.MethodGet, "/jobs/{jobId}/history", s.jobHistory)
	r.HandleFunc("/v1/schemas", serveSchemas).Methods(http.MethodGet)
	r.HandleFunc("/v1/schemas/{name}", serveSchema).Methods(http.MethodGet)
	// The recoverer sits inside requestContext, so a panic's 500 is logged
	// and counted like any answer.
	v1(http.MethodPost, "/api-keys", s.createKey)
	v1(http.MethodGet, "/api-keys", s.listKeys)
	v1(http.MethodDelete, "/api-keys/{id}", s.revokeKey)
	return s.requestContext(s.recoverer(s.bodyDeadline(r)))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}
