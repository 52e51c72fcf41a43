package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/api"
	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// Config is the configuration of `docket serve`. Every field is a flag and
// also reads the environment variable DOCKET_<FLAG NAME IN UPPER SNAKE CASE>;
// a flag given on the command line wins over the environment.
type Config struct {
	// DataDir holds the embedded broker's log, the views, the blobs and the
	// default org's API key. Default "./docket-data".
	DataDir string
	// BlobDir holds uploaded documents, content-addressed. Nodes that share
	// documents (an API node and worker nodes) must share it.
	// Default "<DataDir>/blobs".
	BlobDir string
	// BlobStore, when set to s3://bucket[/prefix], keeps documents in an
	// S3-compatible store instead of BlobDir, so nodes on different machines
	// share them. Default "" (the filesystem).
	BlobStore string
	// S3Endpoint is the S3 endpoint URL. Default "" (AWS S3).
	S3Endpoint string
	// S3Region is the S3 region. Default "us-east-1".
	S3Region string
	// S3AccessKey and S3SecretKey are the S3 credentials. Default "".
	S3AccessKey, S3SecretKey string
	// Listen is the HTTP address. Default "127.0.0.1:8080".
	Listen string
	// BrokerListen is the embedded broker's address when no external brokers
	// are given; ":0" picks any free port. The bound address is written to
	// <DataDir>/broker.addr. Default "127.0.0.1:9092".
	BrokerListen string
	// KafkaBrokers, when set, is a comma-separated list of an external
	// cluster's brokers; the embedded broker is then not started.
	// Default "" (embedded).
	KafkaBrokers string
	// Roles is the comma-separated set of parts this node runs: api,
	// projections, duties, worker. api and duties need projections; a
	// worker-only node opens neither HTTP nor Pebble. Default all four.
	Roles string
	// SchemaRegistryURL, when set, makes this node write events in the
	// Confluent wire format with schemas registered at this Confluent-API
	// schema registry; it reads both that and the single-object encoding.
	// Default "": single-object encoding, no registry.
	SchemaRegistryURL string
	// TopicPrefix names the topics (<prefix>.events, <prefix>.work,
	// <prefix>.layout) and the consumer groups (<prefix>-duties,
	// <prefix>-workers). Default "docket".
	TopicPrefix string
	// Partitions is the partition count of newly created topics; existing
	// topics keep the count recorded in <prefix>.layout. Default 12.
	Partitions int
	// ReplicationFactor of newly created topics. Default -1: the brokers'
	// default.replication.factor.
	ReplicationFactor int
	// MinInsyncReplicas sets min.insync.replicas on newly created topics.
	// Default 0: the brokers' setting.
	MinInsyncReplicas int
	// MaxRecordBytes is the largest record this node appends, and the
	// max.message.bytes of the topics it creates (existing topics keep
	// theirs; a smaller one is logged at start). A document whose result
	// is larger fails with result_too_large. Default 17 MiB
	// (eventstore.DefaultMaxRecordBytes: the largest event the codec
	// writes, and room for its framing).
	MaxRecordBytes int
	// ProduceLinger is how long the producer waits for more records of a
	// partition before it sends them: fewer, fuller requests at a
	// moderate load, for up to that much more latency per append
	// (eventstore.Linger). Default 0.
	ProduceLinger time.Duration
	// AppendRounds is how many rounds of appends each partition may have
	// unacknowledged at once; appends that arrive meanwhile go out together
	// when one is acknowledged (eventstore.AppendRounds). 0 means the
	// default, 1; -1 turns rounds off and leaves batching to franz-go, as
	// does a ProduceLinger.
	AppendRounds int
	// RoundLinger is how long, at most, an append that would start its
	// partition's round waits for other appends first
	// (eventstore.RoundLinger); one that finds the partition's rounds in
	// flight never waits for it. At a moderate load it makes the appends
	// of a millisecond share a produce request, and the fetches that
	// follow, for up to that much more latency per append: 1 ms raised the
	// bench's peak by 7-49 % (BENCHMARKS.md, "The round linger"). It needs
	// append rounds: with AppendRounds -1 or a ProduceLinger it has no
	// effect. Default 1ms (the flag's); 0 turns it off.
	RoundLinger time.Duration
	// ViewsWithoutWAL drops Pebble's write-ahead log for the views
	// (projections.WithoutWAL): what a crash of the process loses of them
	// the node applies again from the log before it serves. Default false.
	ViewsWithoutWAL bool
	// WorkerConcurrency is how many documents this node processes at once.
	// Default 4.
	WorkerConcurrency int
	// GCPercent is the Go collector's target (GOGC): the heap may grow by
	// this percentage of the live heap between collections; -1 turns
	// collection off (only with MemoryLimit), 0 keeps the runtime's own.
	// Default 0: the runtime's own (GOGC, else 100; gc.go).
	GCPercent int
	// MemoryLimit is a soft limit of the Go runtime's memory in bytes
	// (GOMEMLIMIT): near it the collector runs as often as it must,
	// whatever GCPercent says. Default 0: the runtime's own (GOMEMLIMIT,
	// else none).
	MemoryLimit int64
	// DocumentTimeout bounds one document's processing. Default 2m.
	DocumentTimeout time.Duration
	// MaxPages fails longer documents with too_many_pages. Default 500.
	MaxPages int
	// Extractor, when set, is the URL of an external extraction service
	// that finds the line items instead of the built-in reader (contract
	// in README, "Extraction"). Default "" (built-in).
	Extractor string
	// ExtractorTimeout bounds one request to --extractor. Default 30s.
	ExtractorTimeout time.Duration
	// OCRLanguages are Tesseract's languages, "+"-separated. Default "eng".
	OCRLanguages string
	// MaxUpload is the largest accepted document in bytes. Default 25 MiB.
	MaxUpload int64
	// StatusRate is the per-org limit of status requests per minute. Default 120.
	StatusRate int
	// Rate is the per-org limit of all requests per minute. Default 1200.
	Rate int
	// IPRate is the per-client-address limit of /v1 requests per minute,
	// checked before the API key. Default 3000.
	IPRate int
	// AppendTimeout bounds how long a write waits for the log's
	// acknowledgement before answering 503 with its outcome unknown.
	// Default 30s.
	AppendTimeout time.Duration
	// HeaderTimeout bounds the arrival of a request's headers. Default 10s.
	HeaderTimeout time.Duration
	// BodyIdleTimeout is how long a request body may stall (then 408).
	// Default 30s.
	BodyIdleTimeout time.Duration
	// BodyTimeout bounds a request body's arrival as a whole (then 408).
	// Default 5m.
	BodyTimeout time.Duration
	// HandleKeys signs job handles: "kid:base64secret,..." (the first signs,
	// all verify, so keys can rotate). Nodes of one deployment must share
	// them. Default "": a key generated on first start and kept in
	// <DataDir>/handle-keys (fine for one node).
	HandleKeys string
	// StallAfter flags an unfinished job as stalled when nothing moved for
	// longer. Default 5m.
	StallAfter time.Duration
	// LostWorkCheck is how often a node running the duties looks for work
	// items deleted before a worker read them (by the work topic's
	// retention, or with the topic, deleted and created again), and
	// dispatches their queued documents again. Default 30s (0 means the
	// default).
	LostWorkCheck time.Duration
	// WebhookAllowPrivate lets webhooks go to private, link-local and
	// metadata addresses. Default false (they are refused, also at delivery
	// time against DNS rebinding).
	WebhookAllowPrivate bool
	// WebhookAllowLoopback lets webhooks go to loopback addresses, so a
	// newcomer can try them locally (`make run` sets it). Default false.
	WebhookAllowLoopback bool
	// WebhookSchedule is the retry schedule, comma-separated durations, the
	// first being the first attempt's delay. Default
	// "0s,5s,5m,30m,2h,5h,10h,10h" (with ±10 % jitter per wait).
	WebhookSchedule string
	// ReadyMaxLag is how many events the views may trail the log on any
	// partition before /readyz answers 503. Default 10000.
	ReadyMaxLag int
	// MetricsListen, when set, serves /metrics on its own address too (a
	// worker-only node has no API listener). Default "": /metrics only on
	// --listen.
	MetricsListen string
	// LogFormat is "json" or "console". Default "json".
	LogFormat string
	// LogLevel is a zerolog level name. Default "info".
	LogLevel string

	// holdWorker, when set, keeps the worker from claiming until it is
	// closed. Tests only.
	holdWorker <-chan struct{}
	// afterClaim is called by the worker between claim and processing.
	afterClaim func(context.Context, eventstore.WorkItem)
	// workReceived is called by the worker with each work item it takes,
	// and its dispatch time (docket bench).
	workReceived func(eventstore.WorkItem, time.Time)
	// dutiesOpts are added to the duties group member's client options.
	// Tests only (they count its requests).
	dutiesOpts []kgo.Opt
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if c.BlobStore != "" {
		if _, _, err := blobstore.ParseURL(c.BlobStore); err != nil {
			errs = append(errs, fmt.Errorf("--blob-store: %w", err))
		}
	}
	if c.BlobStore == "" && c.DataDir != "" && within(c.blobDir(), c.scratchDir()) {
		errs = append(errs, fmt.Errorf("--blob-dir must not be inside %s, which the node empties when it starts", c.scratchDir()))
	}
	if _, err := c.schedule(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateRoles(); err != nil {
		errs = append(errs, err)
	}
	if c.TopicPrefix == "" || strings.ContainsAny(c.TopicPrefix, "/ ") {
		errs = append(errs, errors.New("--topic-prefix must be a non-empty topic name part"))
	}
	if c.Partitions < 1 || c.Partitions > 1000 {
		errs = append(errs, errors.New("--partitions must be between 1 and 1000"))
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1 // the zero value means the documented default
	}
	if c.ReplicationFactor < -1 || c.ReplicationFactor > 32767 {
		errs = append(errs, errors.New("--replication-factor must be -1 or 1 or more"))
	}
	if c.MinInsyncReplicas < 0 {
		errs = append(errs, errors.New("--min-insync-replicas must not be negative"))
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = eventstore.DefaultMaxRecordBytes // the zero value means the documented default
	}
	if c.MaxRecordBytes < 64<<10 || c.MaxRecordBytes > 1<<30 {
		errs = append(errs, errors.New("--max-record-bytes must be between 65536 and 1073741824"))
	}
	if c.ProduceLinger < 0 || c.ProduceLinger > time.Second {
		errs = append(errs, errors.New("--produce-linger must be between 0 and 1s"))
	}
	if c.RoundLinger < 0 || c.RoundLinger > time.Second {
		errs = append(errs, errors.New("--round-linger must be between 0 and 1s"))
	}
	if c.AppendRounds == 0 {
		c.AppendRounds = 1 // the zero value means the documented default
	}
	if c.AppendRounds < -1 || c.AppendRounds > 5 {
		errs = append(errs, errors.New("--append-rounds must be -1 (off) or 1 to 5"))
	}
	if c.WorkerConcurrency < 1 {
		errs = append(errs, errors.New("--worker-concurrency must be at least 1"))
	}
	if c.DocumentTimeout <= 0 {
		errs = append(errs, errors.New("--document-timeout must be positive"))
	}
	if c.MaxPages < 1 {
		errs = append(errs, errors.New("--max-pages must be at least 1"))
	}
	if err := c.validateExtraction(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxUpload < 1 {
		errs = append(errs, errors.New("--max-upload must be positive"))
	}
	if c.LostWorkCheck < 0 {
		errs = append(errs, errors.New("--lost-work-check must not be negative"))
	}
	if c.ReadyMaxLag < 0 {
		errs = append(errs, errors.New("--ready-max-lag must not be negative"))
	}
	if c.IPRate < 0 || c.HeaderTimeout < 0 || c.BodyIdleTimeout < 0 || c.BodyTimeout < 0 || c.AppendTimeout < 0 {
		errs = append(errs, errors.New("--ip-rate, --header-timeout, --body-idle-timeout, --body-timeout and --append-timeout must not be negative"))
	}
	if err := validateGC(c.GCPercent, c.MemoryLimit); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		errs = append(errs, errors.New("--log-format must be json or console"))
	}
	return errors.Join(errs...)
}

// Node roles.
const (
	roleAPI         = "api"
	roleProjections = "projections"
	roleDuties      = "duties"
	roleWorker      = "worker"
)

func (c *Config) roleSet() map[string]bool {
	set := map[string]bool{}
	roles := c.Roles
	if roles == "" {
		roles = "api,projections,duties,worker"
	}
	for _, r := range strings.Split(roles, ",") {
		set[strings.TrimSpace(r)] = true
	}
	return set
}

func (c *Config) validateRoles() error {
	set := c.roleSet()
	for r := range set {
		switch r {
		case roleAPI, roleProjections, roleDuties, roleWorker:
		default:
			return fmt.Errorf("--roles: unknown role %q (api, projections, duties, worker)", r)
		}
	}
	if (set[roleAPI] || set[roleDuties]) && !set[roleProjections] {
		return errors.New("--roles: api and duties need projections")
	}
	return nil
}

// openBlobs opens the configured blob store; a local one reports its
// journal's failures to log, and S3 spools uploads in tempDir.
func (c *Config) openBlobs(ctx context.Context, log zerolog.Logger, tempDir string) (blobstore.Store, error) {
	if c.BlobStore == "" {
		return blobstore.NewFS(c.blobDir(), blobstore.MaxSize(c.MaxUpload), blobstore.Logger(log))
	}
	bucket, prefix, err := blobstore.ParseURL(c.BlobStore)
	if err != nil {
		return nil, err
	}
	return blobstore.NewS3(ctx, blobstore.S3Config{
		Endpoint: c.S3Endpoint, Region: c.S3Region, AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey,
		Bucket: bucket, Prefix: prefix, TempDir: tempDir,
	}, blobstore.MaxSize(c.MaxUpload))
}

// schedule parses WebhookSchedule.
func (c *Config) schedule() ([]time.Duration, error) {
	if c.WebhookSchedule == "" {
		return projections.DefaultSchedule, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(c.WebhookSchedule, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--webhook-schedule: %q is not a duration", f)
		}
		out = append(out, d)
	}
	return out, nil
}

// viewsWAL is ViewsWithoutWAL as projections.Open takes it.
func (c *Config) viewsWAL() []projections.Option {
	if c.ViewsWithoutWAL {
		return []projections.Option{projections.WithoutWAL()}
	}
	return nil
}

// appendRounds is AppendRounds as eventstore.AppendRounds takes it.
func (c *Config) appendRounds() int {
	switch {
	case c.AppendRounds == 0:
		return 1
	case c.AppendRounds < 0:
		return 0
	}
	return c.AppendRounds
}

// blobDir resolves BlobDir's default.
func (c *Config) blobDir() string {
	if c.BlobDir != "" {
		return c.BlobDir
	}
	return filepath.Join(c.DataDir, "blobs")
}

// scratchDir is where the node keeps its temporary files (node.go): the
// copies of uploads that poppler and Tesseract read, and uploads spooled
// for S3. Not "tmp", so that it never is a local blob store's own tmp
// (<blob-dir>/tmp) when --blob-dir is the data dir.
func (c *Config) scratchDir() string { return filepath.Join(c.DataDir, "scratch") }

// within reports whether path is dir or lies under it, as absolute paths.
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Brokers splits KafkaBrokers.
func (c *Config) Brokers() []string {
	var out []string
	for _, b := range strings.Split(c.KafkaBrokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// bindFlags registers the flags with their defaults, which the environment
// may override.
func (c *Config) bindFlags(fs *flag.FlagSet) {
	str := func(p *string, name, def, usage string) { fs.StringVar(p, name, env(name, def), usage) }
	integer := func(p *int, name string, def int, usage string) {
		v, _ := strconv.Atoi(env(name, strconv.Itoa(def)))
		fs.IntVar(p, name, v, usage)
	}
	str(&c.DataDir, "data-dir", "./docket-data", "directory for the log, views, blobs and api-key")
	str(&c.BlobDir, "blob-dir", "", "directory of uploaded documents (default <data-dir>/blobs)")
	str(&c.BlobStore, "blob-store", "", "s3://bucket[/prefix] to keep documents in S3 (default: --blob-dir)")
	str(&c.S3Endpoint, "s3-endpoint", "", "S3 endpoint URL (default: AWS S3)")
	str(&c.S3Region, "s3-region", "us-east-1", "S3 region")
	str(&c.S3AccessKey, "s3-access-key", "", "S3 access key")
	str(&c.S3SecretKey, "s3-secret-key", "", "S3 secret key")
	str(&c.Listen, "listen", "127.0.0.1:8080", "HTTP listen address")
	str(&c.BrokerListen, "broker-listen", "127.0.0.1:9092", "embedded broker address (:0 for any port)")
	str(&c.KafkaBrokers, "kafka-brokers", "", "external Kafka brokers host:port,... (default: embedded broker)")
	str(&c.Roles, "roles", "api,projections,duties,worker", "parts this node runs (api,projections,duties,worker)")
	str(&c.TopicPrefix, "topic-prefix", "docket", "prefix of topic and consumer group names")
	str(&c.SchemaRegistryURL, "schema-registry-url", "", "Confluent-API schema registry: write the Confluent wire format (default: single-object encoding)")
	integer(&c.Partitions, "partitions", 12, "partitions of newly created topics")
	integer(&c.ReplicationFactor, "replication-factor", -1, "replication factor of newly created topics (-1: broker default)")
	integer(&c.MinInsyncReplicas, "min-insync-replicas", 0, "min.insync.replicas of newly created topics (0: broker default)")
	integer(&c.MaxRecordBytes, "max-record-bytes", eventstore.DefaultMaxRecordBytes, "largest record appended, and max.message.bytes of newly created topics")
	integer(&c.AppendRounds, "append-rounds", 1, "rounds of appends a partition may have unacknowledged; later appends go out together (-1: off)")
	integer(&c.WorkerConcurrency, "worker-concurrency", 4, "documents processed at once by this node")
	integer(&c.GCPercent, "gc-percent", 0, "Go GC target, GOGC (-1 off, with --memory-limit; 0 the runtime's own)")
	ml, _ := strconv.ParseInt(env("memory-limit", "0"), 10, 64)
	fs.Int64Var(&c.MemoryLimit, "memory-limit", ml, "soft limit of the Go runtime's memory in bytes, GOMEMLIMIT (0 the runtime's own)")
	c.bindExtractFlags(fs)
	mu, _ := strconv.ParseInt(env("max-upload", strconv.FormatInt(blobstore.DefaultMaxSize, 10)), 10, 64)
	fs.Int64Var(&c.MaxUpload, "max-upload", mu, "largest accepted document in bytes")
	integer(&c.StatusRate, "status-rate", 120, "status requests per org per minute")
	integer(&c.Rate, "rate", 1200, "requests of any kind per org per minute")
	integer(&c.IPRate, "ip-rate", 3000, "/v1 requests per client address per minute")
	dur := func(p *time.Duration, name, def, usage string) {
		v, err := time.ParseDuration(env(name, def))
		if err != nil {
			v, _ = time.ParseDuration(def)
		}
		fs.DurationVar(p, name, v, usage)
	}
	dur(&c.HeaderTimeout, "header-timeout", "10s", "time limit for a request's headers")
	dur(&c.AppendTimeout, "append-timeout", "30s", "time a write waits for the log before answering 503")
	dur(&c.BodyIdleTimeout, "body-idle-timeout", "30s", "time a request body may stall")
	dur(&c.BodyTimeout, "body-timeout", "5m", "time limit for a request body")
	dur(&c.ProduceLinger, "produce-linger", "0s", "time the producer waits for more records of a partition before sending them")
	dur(&c.RoundLinger, "round-linger", "1ms", "time an append that would start its partition's round waits for others first")
	dur(&c.LostWorkCheck, "lost-work-check", "30s", "how often the duties look for work items deleted unread (retention, or the work topic created again)")
	str(&c.HandleKeys, "handle-keys", "", "job handle signing keys kid:base64,... (default: generated into <data-dir>/handle-keys)")
	sa, _ := time.ParseDuration(env("stall-after", "5m"))
	fs.DurationVar(&c.StallAfter, "stall-after", sa, "mark unfinished jobs stalled after this long without progress")
	boolean := func(p *bool, name string, def bool, usage string) {
		v, err := strconv.ParseBool(env(name, strconv.FormatBool(def)))
		if err != nil {
			v = def
		}
		fs.BoolVar(p, name, v, usage)
	}
	boolean(&c.ViewsWithoutWAL, "views-without-wal", false, "drop Pebble's write-ahead log for the views: what a crash loses of them is applied again from the log before the node serves")
	boolean(&c.WebhookAllowPrivate, "webhook-allow-private", false, "allow webhooks to private, link-local and metadata addresses")
	boolean(&c.WebhookAllowLoopback, "webhook-allow-loopback", false, "allow webhooks to loopback addresses (local trials)")
	str(&c.WebhookSchedule, "webhook-schedule", "0s,5s,5m,30m,2h,5h,10h,10h", "webhook attempt delays, comma-separated")
	integer(&c.ReadyMaxLag, "ready-max-lag", 10000, "events the views may trail the log on a partition before /readyz answers 503")
	str(&c.MetricsListen, "metrics-listen", "", "extra address serving /metrics (default: only on --listen)")
	str(&c.LogFormat, "log-format", "json", "json or console")
	str(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
}

// env reads DOCKET_<NAME> for flag name, or returns def.
func env(name, def string) string {
	if v, ok := os.LookupEnv("DOCKET_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))); ok {
		return v
	}
	return def
}

func (c *Config) apiConfig(handles *api.Signer) api.Config {
	return api.Config{MaxUpload: c.MaxUpload, StatusRate: c.StatusRate, Rate: c.Rate, IPRate: c.IPRate,
		BodyIdleTimeout: c.BodyIdleTimeout, BodyTimeout: c.BodyTimeout, AppendTimeout: c.AppendTimeout, Handles: handles, StallAfter: c.StallAfter,
		WebhookAllowPrivate: c.WebhookAllowPrivate, WebhookAllowLoopback: c.WebhookAllowLoopback, ReadyMaxLag: int64(c.ReadyMaxLag)}
}

// signer builds the handle signer from --handle-keys, or from a key kept in
// the data dir (created on first start, mode 0600).
func (c *Config) signer() (*api.Signer, error) {
	spec := c.HandleKeys
	if spec == "" {
		path := filepath.Join(c.DataDir, "handle-keys")
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			spec = strings.TrimSpace(string(b))
		case errors.Is(err, os.ErrNotExist):
			k, err := api.NewHandleKey("k1")
			if err != nil {
				return nil, err
			}
			spec = api.FormatHandleKeys([]api.HandleKey{k})
			if err := writeFileAtomic(path, []byte(spec+"\n"), 0o600); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	keys, err := api.ParseHandleKeys(spec)
	if err != nil {
		return nil, fmt.Errorf("--handle-keys: %w", err)
	}
	return api.NewSigner(keys)
}

func usageError(format string, args ...any) error { return fmt.Errorf("usage: "+format, args...) }
