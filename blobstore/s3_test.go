package blobstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// The S3 tests that need a server run against a real S3-compatible server
// named by these variables; scripts/s3/s3.sh starts one and prints them.
const (
	envS3Endpoint  = "DOCKET_TEST_S3_ENDPOINT"
	envS3AccessKey = "DOCKET_TEST_S3_ACCESS_KEY"
	envS3SecretKey = "DOCKET_TEST_S3_SECRET_KEY"
	envS3Bucket    = "DOCKET_TEST_S3_BUCKET"
	envS3Region    = "DOCKET_TEST_S3_REGION"
)

// s3TestConfig returns the configuration of the test server with a prefix
// no other test uses (objects under it are removed when t ends), or skips t
// when no server is configured.
func s3TestConfig(t *testing.T) S3Config {
	t.Helper()
	endpoint := os.Getenv(envS3Endpoint)
	if endpoint == "" {
		t.Skipf("no S3 server: set %s etc. to run; `scripts/s3/s3.sh start` starts one and `export $(scripts/s3/s3.sh env)` sets them, or run `scripts/s3/s3.sh test`", envS3Endpoint)
	}
	cfg := S3Config{
		Endpoint:  endpoint,
		Region:    os.Getenv(envS3Region),
		AccessKey: os.Getenv(envS3AccessKey),
		SecretKey: os.Getenv(envS3SecretKey),
		Bucket:    os.Getenv(envS3Bucket),
		PathStyle: true,
		TempDir:   t.TempDir(),
		Prefix:    uniquePrefix(t),
	}
	t.Cleanup(func() { removeS3Prefix(t, cfg) })
	return cfg
}

var nonPrefixChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func uniquePrefix(t *testing.T) string {
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	return "docket-test/" + nonPrefixChars.ReplaceAllString(t.Name(), "_") + "-" + hex.EncodeToString(r[:])
}

// rawS3 is a plain client on the test server, for looking behind the store.
func rawS3(t *testing.T, cfg S3Config) *S3 {
	t.Helper()
	s, err := newS3(cfg)
	if err != nil {
		t.Fatalf("newS3: %v", err)
	}
	return s
}

func listS3(t *testing.T, cfg S3Config) []string {
	t.Helper()
	s := rawS3(t, cfg)
	var out []string
	for obj := range s.client.ListObjects(context.Background(), cfg.Bucket, minio.ListObjectsOptions{
		Prefix: cfg.Prefix + "/", Recursive: true,
	}) {
		if obj.Err != nil {
			t.Fatalf("list %s/%s: %v", cfg.Bucket, cfg.Prefix, obj.Err)
		}
		out = append(out, obj.Key)
	}
	return out
}

func removeS3Prefix(t *testing.T, cfg S3Config) {
	s := rawS3(t, cfg)
	ctx := context.Background()
	for obj := range s.client.ListObjects(ctx, cfg.Bucket, minio.ListObjectsOptions{Prefix: cfg.Prefix + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Logf("cleanup: list: %v", obj.Err)
			return
		}
		if err := s.client.RemoveObject(ctx, cfg.Bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			t.Logf("cleanup: remove %s: %v", obj.Key, err)
		}
	}
}

func newS3UnderTest(t *testing.T, opts ...Option) storeUnderTest {
	t.Helper()
	cfg := s3TestConfig(t)
	s, err := NewS3(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	return storeUnderTest{
		Store:   s,
		objects: func(t *testing.T) []string { return listS3(t, cfg) },
		temps:   func(t *testing.T) []string { return listFiles(t, cfg.TempDir) },
	}
}

func TestS3Conformance(t *testing.T) {
	t.Parallel()
	s3TestConfig(t) // skip early, once, when there is no server
	testStore(t, newS3UnderTest)
}

func TestS3ObjectName(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	s, err := NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	blob, err := s.Put(context.Background(), strings.NewReader("where does it go"))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got, want := listS3(t, cfg), []string{cfg.Prefix + "/" + blob.Key}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("objects = %v, want %v", got, want)
	}

	// A store with another prefix in the same bucket does not see it.
	other := cfg
	other.Prefix = uniquePrefix(t)
	s2, err := NewS3(context.Background(), other)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	if _, err := s2.Stat(context.Background(), blob.Key); !IsNotFound(err) {
		t.Fatalf("Stat under another prefix: err = %v, want ErrNotFound", err)
	}
}

// recordingProxy sits between the store and the test server and records
// every request; with cutPuts it breaks every PUT body off after that many
// bytes, like a connection dropping mid-upload. It keeps the Host header so
// SigV4 signatures stay valid.
type recordingProxy struct {
	*httptest.Server
	cutPuts int64

	mu   sync.Mutex
	reqs []http.Request
}

func newRecordingProxy(t *testing.T, target string, cutPuts int64) *recordingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{cutPuts: cutPuts}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			p.mu.Lock()
			p.reqs = append(p.reqs, *pr.In.Clone(context.Background()))
			p.mu.Unlock()
			if p.cutPuts > 0 && pr.Out.Method == http.MethodPut {
				pr.Out.Body = io.NopCloser(io.MultiReader(
					io.LimitReader(pr.Out.Body, p.cutPuts),
					&failingReader{done: true},
				))
			}
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.Server = httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return p
}

func (p *recordingProxy) requests(method string) []http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []http.Request
	for _, r := range p.reqs {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

func TestS3PutSendsPayloadHash(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	proxy := newRecordingProxy(t, cfg.Endpoint, 0)
	viaProxy := cfg
	viaProxy.Endpoint = proxy.URL
	s, err := NewS3(context.Background(), viaProxy)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	body := bytes.Repeat([]byte("hash me "), 4096)
	blob, err := s.Put(context.Background(), bytes.NewReader(body))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	puts := proxy.requests(http.MethodPut)
	if len(puts) != 1 {
		t.Fatalf("%d PUT requests, want 1", len(puts))
	}
	if got := puts[0].Header.Get("X-Amz-Content-Sha256"); got != blob.Key {
		t.Errorf("x-amz-content-sha256 = %q, want the payload hash %q", got, blob.Key)
	}
	if puts[0].ContentLength != int64(len(body)) {
		t.Errorf("Content-Length = %d, want %d", puts[0].ContentLength, len(body))
	}
	if want := "/" + cfg.Bucket + "/" + cfg.Prefix + "/" + blob.Key; puts[0].URL.Path != want {
		t.Errorf("PUT path = %q, want %q", puts[0].URL.Path, want)
	}

	// The same content again is found by HEAD and not uploaded.
	if _, err := s.Put(context.Background(), bytes.NewReader(body)); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	if n := len(proxy.requests(http.MethodPut)); n != 1 {
		t.Errorf("%d PUT requests after a duplicate Put, want still 1", n)
	}
}

// The server itself verifies x-amz-content-sha256: a payload that does not
// match it is refused and nothing is stored.
func TestS3ServerRejectsWrongPayloadHash(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	s := rawS3(t, cfg)
	body := []byte("the real bytes")
	key := keyOf(body)
	_, err := s.core.PutObject(context.Background(), cfg.Bucket, s.object(key),
		bytes.NewReader(body), int64(len(body)), "", keyOf([]byte("other bytes")),
		minio.PutObjectOptions{DisableContentSha256: true})
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("PUT with a wrong payload hash: err = %v, want a 400 error response", err)
	}
	if got := listS3(t, cfg); len(got) != 0 {
		t.Fatalf("objects = %v after a refused PUT", got)
	}
}

// A PUT that breaks off midway leaves nothing under the key (S3 PUTs are
// atomic), is retryable, and leaves no temporary file.
func TestS3InterruptedUploadLeavesNothing(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	proxy := newRecordingProxy(t, cfg.Endpoint, 64<<10)
	viaProxy := cfg
	viaProxy.Endpoint = proxy.URL
	viaProxy.MaxRetries = 2
	s, err := NewS3(context.Background(), viaProxy)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	body := make([]byte, 1<<20)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	_, err = s.Put(context.Background(), bytes.NewReader(body))
	if !IsRetryable(err) || IsClientError(err) {
		t.Fatalf("Put through a dropping link: err = %v, want retryable", err)
	}
	if n := len(proxy.requests(http.MethodPut)); n != 2 {
		t.Errorf("%d PUT attempts, want MaxRetries = 2", n)
	}
	direct := rawS3(t, cfg)
	if _, err := direct.Stat(context.Background(), keyOf(body)); !IsNotFound(err) {
		t.Fatalf("Stat after a broken upload: err = %v, want ErrNotFound", err)
	}
	if got := listS3(t, cfg); len(got) != 0 {
		t.Fatalf("objects = %v after a broken upload", got)
	}
	if got := listFiles(t, cfg.TempDir); len(got) != 0 {
		t.Fatalf("temporary files left behind: %v", got)
	}
}

// An object of the wrong size under a key is damage, and Put replaces it.
func TestS3PutRepairsDamagedObject(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	s, err := NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	body := []byte("will be truncated in the bucket")
	key := keyOf(body)
	if _, err := s.client.PutObject(context.Background(), cfg.Bucket, s.object(key),
		bytes.NewReader(body[:3]), 3, minio.PutObjectOptions{}); err != nil {
		t.Fatalf("plant damaged object: %v", err)
	}
	if _, err := s.Put(context.Background(), bytes.NewReader(body)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got := readBlob(t, s, key); !bytes.Equal(got, body) {
		t.Fatalf("read %q, want %q", got, body)
	}
}

// Open reports content that does not hash to its key instead of serving it.
func TestS3OpenDetectsCorruption(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	s, err := NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	body := []byte("original content")
	bad := []byte("corrupted bytes!") // same length
	key := keyOf(body)
	if _, err := s.client.PutObject(context.Background(), cfg.Bucket, s.object(key),
		bytes.NewReader(bad), int64(len(bad)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("plant corrupt object: %v", err)
	}
	rc, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); err == nil || IsRetryable(err) {
		t.Fatalf("reading a corrupt blob: err = %v, want a non-retryable error", err)
	}
}

// A cancelled reader fails its next Read, whether the rest of the body is
// still on the wire (4 MiB) or already buffered in the client (2 KiB, which
// the transport cannot fail; CI once caught the large case served whole).
func TestS3OpenContextCanceledWhileReading(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	s, err := NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	for _, size := range []int{4 << 20, 2 << 10} {
		body := bytes.Repeat([]byte("z"), size)
		blob, err := s.Put(context.Background(), bytes.NewReader(body))
		if err != nil {
			t.Fatalf("Put %d bytes: %v", size, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		rc, err := s.Open(ctx, blob.Key)
		if err != nil {
			t.Fatalf("Open %d bytes: %v", size, err)
		}
		if _, err := io.ReadFull(rc, make([]byte, 1024)); err != nil {
			t.Fatalf("first read of %d bytes: %v", size, err)
		}
		cancel()
		if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) || IsRetryable(err) {
			t.Errorf("%d bytes, read after cancel: err = %v, want context.Canceled", size, err)
		}
		rc.Close()
	}
}

func TestNewS3ChecksBucketAndCredentials(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	ctx := context.Background()

	noBucket := cfg
	noBucket.Bucket = "docket-no-such-bucket"
	if _, err := NewS3(ctx, noBucket); err == nil || IsRetryable(err) {
		t.Errorf("missing bucket: err = %v, want a non-retryable error", err)
	}

	badSecret := cfg
	badSecret.SecretKey = "not-the-secret"
	_, err := NewS3(ctx, badSecret)
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) || resp.StatusCode != http.StatusForbidden || IsRetryable(err) || IsClientError(err) {
		t.Errorf("wrong secret: err = %v, want a non-retryable 403", err)
	}
}

// closedEndpoint returns the URL of a loopback port that nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func offlineConfig(t *testing.T, endpoint string) S3Config {
	return S3Config{
		Endpoint:   endpoint,
		AccessKey:  "key",
		SecretKey:  "secret",
		Bucket:     "docket",
		TempDir:    t.TempDir(),
		MaxRetries: 2,
	}
}

// Needs no server: the point is that there is none.
func TestS3ServerDownIsRetryable(t *testing.T) {
	t.Parallel()
	cfg := offlineConfig(t, closedEndpoint(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := NewS3(ctx, cfg); !IsRetryable(err) {
		t.Errorf("NewS3: err = %v, want retryable", err)
	}
	s, err := newS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf([]byte("x"))
	_, err = s.Put(ctx, strings.NewReader("x"))
	if !IsRetryable(err) || IsClientError(err) || IsNotFound(err) {
		t.Errorf("Put: err = %v, want retryable only", err)
	}
	if _, err := s.Stat(ctx, key); !IsRetryable(err) {
		t.Errorf("Stat: err = %v, want retryable", err)
	}
	if _, err := s.Open(ctx, key); !IsRetryable(err) {
		t.Errorf("Open: err = %v, want retryable", err)
	}
	if got := listFiles(t, cfg.TempDir); len(got) != 0 {
		t.Errorf("temporary files left behind: %v", got)
	}
}

// Error responses are classified by status and S3 code. This stub only
// answers with errors; everything else runs against the real server.
func TestS3ErrorResponsesClassified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		code      string
		retryable bool
	}{
		{http.StatusServiceUnavailable, "SlowDown", true},
		{http.StatusInternalServerError, "InternalError", true},
		{http.StatusTooManyRequests, "TooManyRequests", true},
		{http.StatusBadRequest, "RequestTimeout", true},
		{http.StatusForbidden, "AccessDenied", false},
		{http.StatusBadRequest, "InvalidRequest", false},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.code), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(tc.status)
				if r.Method != http.MethodHead {
					fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>stub</Message></Error>`, tc.code)
				}
			}))
			defer srv.Close()
			cfg := offlineConfig(t, srv.URL)
			cfg.MaxRetries = 1
			s, err := newS3(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := s.Open(context.Background(), keyOf([]byte("x")))
			if rc != nil {
				rc.Close()
			}
			if IsRetryable(err) != tc.retryable || IsNotFound(err) || IsClientError(err) {
				t.Fatalf("Open: err = %v, want retryable=%v", err, tc.retryable)
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, bucket, prefix string
	}{
		{"s3://docket", "docket", ""},
		{"s3://docket/", "docket", ""},
		{"s3://docket/blobs", "docket", "blobs"},
		{"s3://docket/prod/blobs/", "docket", "prod/blobs"},
		{"s3://my.bucket-1/x", "my.bucket-1", "x"},
	} {
		b, p, err := ParseURL(tc.in)
		if err != nil || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q", tc.in, b, p, err, tc.bucket, tc.prefix)
		}
	}
	for _, in := range []string{
		"",
		"docket",
		"s3:docket",
		"http://docket/x",
		"s3://",
		"s3:///prefix",
		"s3://Docket",
		"s3://ab",
		"s3://bad_bucket",
		"s3://docket:9000/x",
		"s3://user@docket/x",
		"s3://docket/x?y=1",
		"s3://docket/x#y",
		"s3://docket/a//b",
		"s3://docket/a/../b",
		"s3://docket/./b",
	} {
		if b, p, err := ParseURL(in); err == nil {
			t.Errorf("ParseURL(%q) = %q, %q, nil; want an error", in, b, p)
		}
	}
}

func TestNewS3ValidatesConfig(t *testing.T) {
	t.Parallel()
	good := S3Config{Endpoint: "http://127.0.0.1:9000", AccessKey: "k", SecretKey: "s", Bucket: "docket"}
	if _, err := newS3(good); err != nil {
		t.Fatalf("newS3(%+v): %v", good, err)
	}
	for name, mutate := range map[string]func(*S3Config){
		"no bucket":        func(c *S3Config) { c.Bucket = "" },
		"bad bucket":       func(c *S3Config) { c.Bucket = "Bad_Bucket" },
		"no access key":    func(c *S3Config) { c.AccessKey = "" },
		"no secret key":    func(c *S3Config) { c.SecretKey = "" },
		"no scheme":        func(c *S3Config) { c.Endpoint = "127.0.0.1:9000" },
		"ftp":              func(c *S3Config) { c.Endpoint = "ftp://127.0.0.1" },
		"endpoint path":    func(c *S3Config) { c.Endpoint = "http://127.0.0.1:9000/bucket" },
		"dot-dot prefix":   func(c *S3Config) { c.Prefix = "a/../b" },
		"negative retries": func(c *S3Config) { c.MaxRetries = -1 },
	} {
		cfg := good
		mutate(&cfg)
		if _, err := newS3(cfg); err == nil {
			t.Errorf("%s: newS3(%+v) succeeded", name, cfg)
		}
	}
	if _, err := newS3(good, MaxSize(0)); err == nil {
		t.Error("newS3 with MaxSize(0) succeeded")
	}
}
