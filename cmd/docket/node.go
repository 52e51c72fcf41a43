package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/api"
	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/extract"
	"github.com/docket/docket/internal/scratch"
	"github.com/docket/docket/metrics"
	"github.com/docket/docket/projections"
	"github.com/docket/docket/webhook"
	"github.com/docket/docket/worker"
)

// node is one running docket process: broker (when embedded), views,
// duties, worker and HTTP API.
type node struct {
	cfg         Config
	log         zerolog.Logger
	broker      *eventstore.Embedded
	store       *eventstore.Store
	views       *projections.Views
	blobs       blobstore.Store
	scratch     *scratch.Dir // this node's temporary files, under <data-dir>/scratch
	http        *http.Server
	httpAddr    string
	metrics     *metrics.Metrics
	extra       []*http.Server  // the --metrics-listen server
	metricsAddr string          // its bound address
	startEnd    map[int32]int64 // log end offsets at start: ready once applied

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	err    error
}

// startNode starts everything and returns once the views have caught up with
// the log as it was at start, so the HTTP API never serves a stale past.
func startNode(ctx context.Context, cfg Config, log zerolog.Logger) (*node, error) {
	return startNodeWith(ctx, cfg, log)
}

// startNodeWith is startNode with extra view options (the benchmark listens
// to applied events).
func startNodeWith(ctx context.Context, cfg Config, log zerolog.Logger, viewOpts ...projections.Option) (n *node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	started := &node{cfg: cfg, log: log, metrics: metrics.New()}
	n = started
	defer func() {
		if err != nil {
			started.close() // n itself is nil on the error returns
		}
	}()
	nodeID, err := readOrCreate(filepath.Join(cfg.DataDir, "node-id"), func() string { return eventstore.NewID("node_") })
	if err != nil {
		return nil, err
	}
	// Extraction writes copies of uploads for poppler and Tesseract, and
	// the S3 store spools uploads, under a directory of the node's own: a
	// node killed while it did either left them behind, and this start
	// removes them (an earlier node's lock is free; another node on the
	// same data dir keeps its own).
	if n.scratch, err = scratch.Claim(cfg.scratchDir()); err != nil {
		return nil, err
	}
	if err := scratch.Sweep(cfg.scratchDir(), n.scratch.Path(), nil); err != nil {
		return nil, err
	}
	seeds := cfg.Brokers()
	if len(seeds) == 0 {
		n.broker, err = eventstore.StartEmbedded(filepath.Join(cfg.DataDir, "kafka"), cfg.BrokerListen, int32(cfg.Partitions))
		if err != nil {
			return nil, err
		}
		seeds = []string{n.broker.Addr()}
		if err := writeFileAtomic(filepath.Join(cfg.DataDir, "broker.addr"), []byte(n.broker.Addr()+"\n"), 0o644); err != nil {
			return nil, err
		}
		log.Info().Str("addr", n.broker.Addr()).Msg("embedded Kafka broker listening")
	}
	openCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n.store, err = eventstore.Open(openCtx, seeds, eventstore.Prefix(cfg.TopicPrefix), eventstore.Partitions(int32(cfg.Partitions)),
		eventstore.ReplicationFactor(int16(cfg.ReplicationFactor)), eventstore.MinInsyncReplicas(cfg.MinInsyncReplicas), eventstore.Logger(log),
		eventstore.MaxRecordBytes(int32(cfg.MaxRecordBytes)), eventstore.Linger(cfg.ProduceLinger),
		eventstore.AppendRounds(cfg.appendRounds()), eventstore.RoundLinger(cfg.RoundLinger),
		eventstore.SchemaRegistry(cfg.SchemaRegistryURL),
		eventstore.OnAppend(n.metrics.Appended), eventstore.KafkaHooks(n.metrics.KafkaHook()))
	if err != nil {
		return nil, err
	}
	n.blobs, err = cfg.openBlobs(openCtx, log, n.scratch.Path())
	if err != nil {
		return nil, err
	}
	n.metrics.WatchBlobs(n.blobs)
	roles := cfg.roleSet()
	runCtx, stop := context.WithCancel(context.Background())
	n.cancel = stop
	if roles[roleProjections] {
		n.views, err = projections.Open(filepath.Join(cfg.DataDir, "views"), append([]projections.Option{projections.WithLogger(log), projections.OnApplied(n.metrics.Applied)}, append(cfg.viewsWAL(), viewOpts...)...)...)
		if err != nil {
			return nil, err
		}
		// Run checks these too, but in the background: a node whose views
		// belong to another log, or whose log lost events they need, must
		// not start, and say why.
		if err := n.views.CheckLog(n.store.EventsTopic(), n.store.EventsTopicID()); err != nil {
			return nil, err
		}
		if err := n.views.CheckStart(openCtx, n.store); err != nil {
			return nil, err
		}
		n.metrics.Watch(n.views, n.store)
		if n.startEnd, err = n.store.EndOffsets(openCtx); err != nil {
			return nil, err
		}
		n.goRun("projections", func() error { return n.views.Run(runCtx, n.store, nil) })
		if err := n.waitCaughtUp(ctx); err != nil {
			return nil, err
		}
	}
	if roles[roleDuties] {
		d := &projections.Dispatcher{Store: n.store, Views: n.views, Instance: nodeID + "-duties", Log: log, GroupOpts: cfg.dutiesOpts, LostWorkCheck: cfg.LostWorkCheck,
			OnRedispatch: n.metrics.Redispatched}
		n.goRun("dispatcher", func() error { return d.Run(runCtx) })
		schedule, _ := cfg.schedule()
		client := webhook.NewClient(webhook.AllowPrivate(cfg.WebhookAllowPrivate), webhook.AllowLoopback(cfg.WebhookAllowLoopback))
		handles, err := cfg.signer()
		if err != nil {
			return nil, err
		}
		dl := &projections.Delivery{Store: n.store, Views: n.views, Owned: d.Owned, Post: poster{client: client, handles: handles, ttl: handleTTL, observe: n.metrics.WebhookAttempt, log: log}, Schedule: schedule, Log: log}
		n.goRun("webhooks", func() error { return dl.Run(runCtx) })
	}
	if roles[roleWorker] {
		ex, err := cfg.extractor()
		if err != nil {
			return nil, err
		}
		w := worker.New(n.store, n.blobs,
			worker.Extractor(ex), worker.ExtractOptions(extract.OCRLanguages(cfg.OCRLanguages), extract.TempDir(n.scratch.Path())),
			worker.Concurrency(cfg.WorkerConcurrency), worker.Timeout(cfg.DocumentTimeout), worker.MaxPages(cfg.MaxPages),
			worker.Name(nodeID), worker.Instance(nodeID+"-worker"), worker.Logger(log), worker.Hold(cfg.holdWorker), worker.AfterClaim(cfg.afterClaim), worker.Received(cfg.workReceived),
			worker.Observe(n.metrics.Processed))
		n.goRun("worker", func() error { return w.Run(runCtx) })
	}
	if n.views == nil {
		n.metrics.Watch(nil, n.store)
	}
	if err := n.serveMetrics(); err != nil {
		return nil, err
	}
	if !roles[roleAPI] {
		log.Info().Str("roles", cfg.Roles).Msg("docket node running without HTTP API")
		return n, nil
	}
	if err := n.ensureDefaultOrg(ctx); err != nil {
		return nil, err
	}
	handles, err := cfg.signer()
	if err != nil {
		return nil, err
	}
	apiCfg := cfg.apiConfig(handles)
	apiCfg.Observer, apiCfg.Metrics = n.metrics, n.metrics.Handler()
	srv, err := api.New(apiCfg, n.views, n.store, n.blobs, log, n.ready)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	n.httpAddr = ln.Addr().String()
	if err := writeFileAtomic(filepath.Join(cfg.DataDir, "http.addr"), []byte(n.httpAddr+"\n"), 0o644); err != nil {
		return nil, err
	}
	n.http = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: cmp.Or(cfg.HeaderTimeout, 10*time.Second),
		ReadTimeout:       cmp.Or(cfg.BodyTimeout, 5*time.Minute) + time.Minute, // a backstop; the API's body deadlines answer 408 first
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	// Live streams end only when their client leaves; shutting down ends
	// them first, so it neither waits for its timeout nor races the views.
	n.http.RegisterOnShutdown(srv.StopStreams)
	n.goRun("http", func() error {
		if err := n.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	log.Info().Str("addr", "http://"+n.httpAddr).Msg("docket API listening")
	return n, nil
}

func (n *node) goRun(name string, fn func() error) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := fn(); err != nil {
			n.log.Error().Err(err).Str("component", name).Msg("component stopped")
			n.errMu.Lock()
			if n.err == nil {
				n.err = fmt.Errorf("%s: %w", name, err)
			}
			n.errMu.Unlock()
		}
	}()
}

// failed reports a component's fatal error, if any.
func (n *node) failed() error {
	n.errMu.Lock()
	defer n.errMu.Unlock()
	return n.err
}

func (n *node) waitCaughtUp(ctx context.Context) error {
	for p, end := range n.startEnd {
		if end == 0 {
			continue
		}
		if err := n.views.WaitFor(ctx, eventstore.Position{Partition: p, Offset: end - 1}); err != nil {
			return err
		}
	}
	return nil
}

// ready is /readyz: the views have caught up with the log as it was at
// start, and no component has failed.
func (n *node) ready(ctx context.Context) error {
	if err := n.failed(); err != nil {
		return err
	}
	if n.views == nil {
		return nil
	}
	applied := n.views.Offsets()
	for p, end := range n.startEnd {
		if applied[p] < end {
			return fmt.Errorf("projections behind on partition %d", p)
		}
	}
	return nil
}

// ensureDefaultOrg creates org "default" on first start and writes its key
// to <data-dir>/api-key (0600). A node whose key file is gone gets a new key.
func (n *node) ensureDefaultOrg(ctx context.Context) error {
	keyFile := filepath.Join(n.cfg.DataDir, "api-key")
	orgID := domain.OrgID("default")
	_, err := n.views.Org(orgID)
	if err == nil {
		if _, statErr := os.Stat(keyFile); statErr == nil {
			n.log.Info().Str("api_key_file", keyFile).Msg("default org ready")
			return nil
		}
	} else if !errors.Is(err, projections.ErrNotFound) {
		return err
	}
	var events []domain.Event
	if err != nil {
		events = append(events, &domain.OrgCreated{Meta: eventstore.NewMeta(orgID, "system", ""), Name: "default"})
	}
	key, issued := newAPIKey(orgID, "default key")
	events = append(events, issued)
	pos, aerr := n.store.Append(ctx, events...)
	if aerr != nil {
		return aerr
	}
	if err := n.views.WaitAll(ctx, pos); err != nil {
		return err
	}
	if err := writeFileAtomic(keyFile, []byte(key+"\n"), 0o600); err != nil {
		return err
	}
	n.log.Info().Str("org", orgID).Str("api_key_file", keyFile).Msg("created default org; its API key is in the file")
	return nil
}

// newAPIKey makes a key and the event that records its hash.
func newAPIKey(orgID, label string) (string, *domain.ApiKeyIssued) {
	return api.NewAPIKey(eventstore.NewMeta(orgID, "system", ""), label)
}

// close stops everything in reverse order of start.
func (n *node) close() {
	for _, s := range n.extra {
		_ = s.Close()
	}
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = n.http.Shutdown(ctx)
		cancel()
	}
	if n.cancel != nil {
		n.cancel()
	}
	n.wg.Wait()
	// After the HTTP server and the worker: a blob store that closes
	// makes what its journal held durable and leaves nothing for the next
	// start to recover.
	if c, ok := n.blobs.(io.Closer); ok {
		if err := c.Close(); err != nil {
			n.log.Error().Err(err).Msg("closing the blob store; the next start recovers it")
		}
	}
	if n.scratch != nil {
		if err := n.scratch.Remove(); err != nil {
			n.log.Error().Err(err).Msg("removing the node's temporary files; the next start does")
		}
	}
	if n.views != nil {
		if err := n.views.Close(); err != nil {
			n.log.Error().Err(err).Msg("closing the views; the next start applies again what they did not keep")
		}
	}
	if n.store != nil {
		n.store.Close()
	}
	if n.broker != nil {
		n.broker.Close()
	}
}

// handleTTL is how long the handles in webhook payloads stay valid (the
// API's default).
const handleTTL = 30 * 24 * time.Hour

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

func readOrCreate(path string, make func() string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	v := make()
	return v, writeFileAtomic(path, []byte(v+"\n"), 0o644)
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
