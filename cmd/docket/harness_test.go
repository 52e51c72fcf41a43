package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// The end-to-end suite runs unchanged against the embedded broker (default)
// and a real Kafka cluster: set DOCKET_TEST_KAFKA_BROKERS=host:port,...
// Every test gets its own topic prefix, groups and data directory.
const brokersEnv = "DOCKET_TEST_KAFKA_BROKERS"

type testNode struct {
	t   *testing.T
	cfg Config
	n   *node
	key string
}

type nodeOpt func(*Config)

// setup starts a node in-process on loopback and returns it with the default
// org's API key. The node is closed when the test ends.
func setup(t *testing.T, opts ...nodeOpt) *testNode {
	t.Helper()
	cfg := testConfig(t)
	for _, o := range opts {
		o(&cfg)
	}
	tn := &testNode{t: t, cfg: cfg}
	tn.start()
	t.Cleanup(tn.stop)
	return tn
}

// testConfig is a node's configuration with a data dir, topics and groups
// of its own.
func testConfig(t *testing.T) Config {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	cfg := Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", BrokerListen: "127.0.0.1:0",
		KafkaBrokers: os.Getenv(brokersEnv), TopicPrefix: "e2e-" + hex.EncodeToString(b[:]),
		Partitions: 4, WorkerConcurrency: 4, DocumentTimeout: 30 * time.Second, MaxPages: 50,
		MaxUpload: 1 << 20, StatusRate: 100000, Rate: 1000000, IPRate: 1000000, LogFormat: "json", LogLevel: "warn",
		RoundLinger: time.Millisecond, // serve's default: the suites run what is deployed
	}
	// With a test S3 server (scripts/s3/s3.sh), documents go there, under
	// a prefix of their own, as they would on a multi-node deployment.
	if ep := os.Getenv("DOCKET_TEST_S3_ENDPOINT"); ep != "" {
		cfg.BlobStore = "s3://" + os.Getenv("DOCKET_TEST_S3_BUCKET") + "/" + cfg.TopicPrefix
		cfg.S3Endpoint, cfg.S3AccessKey, cfg.S3SecretKey = ep, os.Getenv("DOCKET_TEST_S3_ACCESS_KEY"), os.Getenv("DOCKET_TEST_S3_SECRET_KEY")
		if r := os.Getenv("DOCKET_TEST_S3_REGION"); r != "" {
			cfg.S3Region = r
		}
	}
	return cfg
}

func (tn *testNode) start() {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(tn.t)).Level(zerolog.WarnLevel)
	n, err := startNode(ctx, tn.cfg, log)
	if err != nil {
		tn.t.Fatalf("start node: %v", err)
	}
	tn.n = n
	key, err := os.ReadFile(filepath.Join(tn.cfg.DataDir, "api-key"))
	if err != nil {
		tn.t.Fatalf("api key: %v", err)
	}
	tn.key = strings.TrimSpace(string(key))
}

func (tn *testNode) stop() {
	if tn.n != nil {
		tn.n.close()
		tn.n = nil
	}
}

func (tn *testNode) url(path string) string { return "http://" + tn.n.httpAddr + path }

// do sends a request with the org's key and decodes a JSON answer into out.
func (tn *testNode) do(method, path string, body io.Reader, contentType string, hdr map[string]string, out any) int {
	tn.t.Helper()
	req, err := http.NewRequest(method, tn.url(path), body)
	if err != nil {
		tn.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tn.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tn.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			tn.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

func (tn *testNode) get(path string, out any) int { return tn.do("GET", path, nil, "", nil, out) }

// multipartBody builds an upload body with a file part and optional reference.
func multipartBody(t *testing.T, name string, content []byte, reference string) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(content)
	if reference != "" {
		_ = mw.WriteField("reference", reference)
	}
	_ = mw.Close()
	return &buf, mw.FormDataContentType()
}

func (tn *testNode) upload(batch, name string, content []byte, reference string) (docView, int) {
	tn.t.Helper()
	body, ct := multipartBody(tn.t, name, content, reference)
	var d docView
	code := tn.do("POST", "/v1/batches/"+batch+"/documents", body, ct, nil, &d)
	return d, code
}

// Views as a client sees them.
type docView struct {
	ID              string     `json:"id"`
	FileName        string     `json:"file_name"`
	Reference       *string    `json:"reference"`
	Status          string     `json:"status"`
	NumPages        *int       `json:"num_pages"`
	Currency        *string    `json:"currency"`
	LineItems       []lineItem `json:"line_items"`
	ProcessingError *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"processing_error"`
	CreatedAt   *time.Time `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

type lineItem struct {
	Description string  `json:"description"`
	Quantity    float64 `json:"quantity"`
	UnitPrice   float64 `json:"unit_price"`
	Amount      float64 `json:"amount"`
}

type batchView struct {
	Name        string         `json:"name"`
	Status      string         `json:"status"`
	Total       int            `json:"total"`
	Counts      map[string]int `json:"counts"`
	AllDone     bool           `json:"all_done"`
	CreatedAt   *time.Time     `json:"created_at"`
	StartedAt   *time.Time     `json:"started_at"`
	CompletedAt *time.Time     `json:"completed_at"`
}

type resultsView struct {
	Batch      batchView `json:"batch"`
	Documents  []docView `json:"documents"`
	NextCursor *string   `json:"next_cursor"`
}

type errorView struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

// waitBatch waits, by following the node's applied views (not by sleeping),
// until cond holds for the batch.
func (tn *testNode) waitBatch(name string, cond func(batchView) bool) batchView {
	tn.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var b batchView
		code := tn.get("/v1/batches/"+name, &b)
		if code == http.StatusOK && cond(b) {
			return b
		}
		if time.Now().After(deadline) {
			tn.t.Fatalf("batch %s: condition not reached; last %d %+v", name, code, b)
		}
		tn.waitApplied()
	}
}

// waitApplied blocks until the views apply something new (or a short
// bound passes, so a condition that needs no new event is re-checked).
func (tn *testNode) waitApplied() {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	p := tn.n.store.PartitionFor("org_default")
	_ = tn.n.views.WaitFor(ctx, nextPosition(tn.n.views.Offsets(), p))
}

func (tn *testNode) results(name string) resultsView {
	tn.t.Helper()
	var r resultsView
	if code := tn.get("/v1/batches/"+name+"/results?limit=1000", &r); code != http.StatusOK {
		tn.t.Fatalf("results %s: %d", name, code)
	}
	return r
}

// verify rebuilds every view from offset 0 into a fresh directory and
// requires it to equal the live views byte for byte (DESIGN invariant 4).
func (tn *testNode) verify() {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	snap, err := tn.n.views.Snapshot()
	if err != nil {
		tn.t.Fatal(err)
	}
	defer snap.Close()
	rebuilt, err := projections.Rebuild(ctx, tn.n.store, tn.t.TempDir(), snap.Offsets)
	if err != nil {
		tn.t.Fatal(err)
	}
	defer rebuilt.Close()
	diff, err := projections.Diff(snap, rebuilt, 10)
	if err != nil {
		tn.t.Fatal(err)
	}
	if len(diff) > 0 {
		tn.t.Fatalf("live views differ from a rebuild:\n%s", strings.Join(diff, "\n"))
	}
}

func positionAt(p int32, o int64) eventstore.Position {
	return eventstore.Position{Partition: p, Offset: o}
}

func nextPosition(applied map[int32]int64, p int32) eventstore.Position {
	return eventstore.Position{Partition: p, Offset: applied[p]}
}
