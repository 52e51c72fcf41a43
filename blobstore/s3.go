package blobstore

// Client choice: github.com/minio/minio-go/v7 rather than aws-sdk-go-v2 or a
// hand-written SigV4 signer. It is one module with a handful of small
// dependencies (aws-sdk-go-v2 needs a dozen modules for the same three
// calls), it is maintained by a storage vendor whose own server is tested
// against it, it speaks to AWS and to every S3-compatible server, and it
// gives us what a hand-written client would have to grow: SigV4 signing,
// path-style and virtual-hosted addressing, typed error responses
// (minio.ErrorResponse, classified below with errors.As) and per-request
// retries with backoff that rewind a seekable body. Its Core API also lets
// Put send a single PUT whose x-amz-content-sha256 is the real payload hash,
// which a hand-rolled signer would have to be tested for separately.

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// ErrUnavailable wraps failures that say nothing about the request itself:
// the storage could not be reached, dropped the connection, timed out, or
// answered with a server-side error or throttling (5xx, 429). The same call
// may succeed later; see IsRetryable.
var ErrUnavailable = errors.New("blobstore: storage unavailable")

// IsRetryable reports whether err is a transient storage failure
// (ErrUnavailable) that a caller may retry, e.g. answering 503 with
// Retry-After instead of 500. Context cancellation and deadlines are not
// retryable: they are the caller's own decision.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnavailable)
}

// S3Config locates a bucket on an S3-compatible service. Only Bucket,
// AccessKey and SecretKey are required.
type S3Config struct {
	// Endpoint is the service's base URL, "http://host:port" or
	// "https://host[:port]", without a path. Default
	// "https://s3.amazonaws.com".
	Endpoint string
	// Region is the signing region. Default "us-east-1", which is also
	// what most S3-compatible servers expect.
	Region string
	// AccessKey and SecretKey are static credentials; both are required.
	AccessKey string
	SecretKey string
	// Bucket must already exist; NewS3 checks that it does.
	Bucket string
	// Prefix, if set, is prepended to every object name as
	// "<Prefix>/<sha256>", so several stores can share a bucket. Leading
	// and trailing slashes are ignored; empty segments, "." and ".." are
	// rejected. Default: no prefix, objects are named "<sha256>".
	Prefix string
	// PathStyle forces path-style requests (http://host/bucket/key). When
	// false the style follows the endpoint: virtual-hosted
	// (http://bucket.host/key) for AWS endpoints, path-style for every
	// other endpoint. So path-style is the default for non-AWS endpoints,
	// and this only needs setting for AWS.
	PathStyle bool
	// TempDir holds Put's temporary files (each at most the size limit,
	// removed before Put returns). Default os.TempDir().
	TempDir string
	// MaxRetries is how many times one request is attempted on a
	// transient failure (network error, 5xx, throttling), with exponential
	// backoff between attempts (200 ms doubling, at most 1 s, jittered).
	// Default 5; 1 disables retries.
	MaxRetries int
}

const (
	defaultS3Endpoint   = "https://s3.amazonaws.com"
	defaultS3Region     = "us-east-1"
	defaultS3MaxRetries = 5
	s3ContentType       = "application/octet-stream"
)

// S3 error codes that the status code alone does not classify.
const (
	s3CodeNoSuchBucket   = "NoSuchBucket"
	s3CodeRequestTimeout = "RequestTimeout" // sent with 400
	s3CodeSlowDown       = "SlowDown"
)

// S3 is a Store on an S3-compatible object store. A blob is the object
// <prefix>/<key> in the bucket.
//
// Put stages the body in a local temporary file while hashing it, because
// the key (and the x-amz-content-sha256 header) must be known before the
// upload starts, and because a seekable body lets the client retry a failed
// PUT. The PUT carries the payload's real SHA-256, so the server rejects
// bytes damaged in transit instead of storing them. An S3 PUT is atomic: a
// failed or interrupted upload leaves nothing under the key, and concurrent
// PUTs of the same content store identical bytes.
//
// Open verifies on the fly that the bytes it returns hash to the key and
// fails the final Read if they do not, so damage at rest is reported rather
// than served.
//
// An S3 is safe for concurrent use.
type S3 struct {
	client  *minio.Client
	core    minio.Core
	bucket  string
	prefix  string
	tmpDir  string
	maxSize int64
}

var _ Store = (*S3)(nil)

// ParseURL splits a store URL of the form s3://bucket[/prefix] into the
// bucket and the prefix (without leading or trailing slashes). The bucket
// must be a valid S3 bucket name; the URL may carry no port, user, query or
// fragment, since the endpoint and credentials are configured separately.
func ParseURL(rawURL string) (bucket, prefix string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", fmt.Errorf("blobstore: parse store URL: %w", err)
	}
	if u.Scheme != "s3" {
		return "", "", fmt.Errorf("blobstore: store URL %q: scheme must be s3://", rawURL)
	}
	if u.Opaque != "" || u.User != nil || u.Port() != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", "", fmt.Errorf("blobstore: store URL %q: want s3://bucket[/prefix] and nothing else", rawURL)
	}
	bucket = u.Host
	if err := s3utils.CheckValidBucketNameStrict(bucket); err != nil {
		return "", "", fmt.Errorf("blobstore: store URL %q: bucket %q: %w", rawURL, bucket, err)
	}
	prefix, err = cleanPrefix(u.Path)
	if err != nil {
		return "", "", fmt.Errorf("blobstore: store URL %q: %w", rawURL, err)
	}
	return bucket, prefix, nil
}

// cleanPrefix trims slashes and rejects prefixes that S3 would accept but
// that would be confusing (or unsafe for filesystem-backed S3 servers).
func cleanPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("prefix %q: empty, '.' or '..' segment", p)
		}
		for _, c := range seg {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return "", fmt.Errorf("prefix %q: control character or backslash", p)
			}
		}
	}
	return p, nil
}

// NewS3 returns a store on cfg.Bucket after checking, within ctx, that the
// bucket exists and the credentials may see it. An unreachable service is
// an error for which IsRetryable is true; a missing bucket or rejected
// credentials are not. Options are shared with NewFS (MaxSize).
func NewS3(ctx context.Context, cfg S3Config, opts ...Option) (*S3, error) {
	s, err := newS3(cfg, opts...)
	if err != nil {
		return nil, err
	}
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return nil, s.classify("check bucket", s.bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("blobstore: bucket %q does not exist", s.bucket)
	}
	return s, nil
}

// newS3 validates cfg and builds the client without touching the network.
func newS3(cfg S3Config, opts ...Option) (*S3, error) {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	if c.maxSize <= 0 {
		return nil, fmt.Errorf("blobstore: max size must be positive, got %d", c.maxSize)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = defaultS3Endpoint
	}
	if cfg.Region == "" {
		cfg.Region = defaultS3Region
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = defaultS3MaxRetries
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("blobstore: s3 max retries must not be negative, got %d", cfg.MaxRetries)
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("blobstore: s3 access key and secret key are required")
	}
	if err := s3utils.CheckValidBucketNameStrict(cfg.Bucket); err != nil {
		return nil, fmt.Errorf("blobstore: s3 bucket %q: %w", cfg.Bucket, err)
	}
	prefix, err := cleanPrefix(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("blobstore: s3 %w", err)
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("blobstore: s3 endpoint: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("blobstore: s3 endpoint %q: want http://host[:port] or https://host[:port]", cfg.Endpoint)
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       cfg.Region, // set, so the client never asks for the bucket's location
		BucketLookup: lookup,
		MaxRetries:   cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("blobstore: s3 client: %w", err)
	}
	return &S3{
		client:  client,
		core:    minio.Core{Client: client},
		bucket:  cfg.Bucket,
		prefix:  prefix,
		tmpDir:  cfg.TempDir,
		maxSize: c.maxSize,
	}, nil
}

// object returns the object name of a validated key.
func (s *S3) object(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

// Put implements Store. Cancelling ctx is noticed between reads of r and
// aborts an upload in progress; as with FS, a Read that blocks forever must
// be unblocked by its owner.
func (s *S3) Put(ctx context.Context, r io.Reader) (blob Blob, err error) {
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("blobstore: put: %w", err)
	}
	f, err := os.CreateTemp(s.tmpDir, "docket-s3-put-*")
	if err != nil {
		return Blob{}, fmt.Errorf("blobstore: create temp file: %w", err)
	}
	defer func() {
		f.Close()
		if rmErr := os.Remove(f.Name()); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) && err == nil {
			err = fmt.Errorf("blobstore: remove temp file: %w", rmErr)
			blob = Blob{}
		}
	}()

	size, sum, err := copyHashed(ctx, f, r, s.maxSize)
	if err != nil {
		return Blob{}, err
	}
	key := hex.EncodeToString(sum)
	name := s.object(key)

	// Same key means same content, so an object of the right size is this
	// one and the upload can be skipped. A size mismatch can only be
	// damage; overwrite it.
	info, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	switch {
	case err == nil && info.Size == size:
		return Blob{Key: key, Size: size}, nil
	case err == nil:
	case isS3NotFound(err):
	default:
		return Blob{}, s.classify("put", key, err)
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Blob{}, fmt.Errorf("blobstore: rewind temp file: %w", err)
	}
	// Core.PutObject is a single PUT (no multipart, whatever the size)
	// with the given SHA-256 as x-amz-content-sha256. DisableContentSha256
	// only turns off the client's own streaming (chunk-signed) mode, which
	// would replace that header.
	_, err = s.core.PutObject(ctx, s.bucket, name, f, size, "", key, minio.PutObjectOptions{
		ContentType:          s3ContentType,
		DisableContentSha256: true,
	})
	if err != nil {
		return Blob{}, s.classify("put", key, err)
	}
	return Blob{Key: key, Size: size}, nil
}

// Open implements Store. The returned reader is bound to ctx: cancelling it
// fails the next Read. Reading to the end verifies that the content hashes
// to key.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := validKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blobstore: open: %w", err)
	}
	body, info, _, err := s.core.GetObject(ctx, s.bucket, s.object(key), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.classify("open", key, err)
	}
	return &verifyingReader{body: body, key: key, size: info.Size, h: sha256.New(), ctx: ctx}, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (Blob, error) {
	if err := validKey(key); err != nil {
		return Blob{}, err
	}
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("blobstore: stat: %w", err)
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.object(key), minio.StatObjectOptions{})
	if err != nil {
		return Blob{}, s.classify("stat", key, err)
	}
	return Blob{Key: key, Size: info.Size}, nil
}

// classify wraps a client error with ErrNotFound, ErrUnavailable or
// nothing, by the error's type and the S3 response's status and code, never
// by its message.
func (s *S3) classify(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("blobstore: %s %s: %w", op, key, err)
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch {
		case resp.StatusCode == http.StatusNotFound && resp.Code != s3CodeNoSuchBucket:
			return fmt.Errorf("%w: %s", ErrNotFound, key)
		case resp.StatusCode >= 500,
			resp.StatusCode == http.StatusTooManyRequests,
			resp.StatusCode == http.StatusRequestTimeout,
			resp.Code == s3CodeRequestTimeout,
			resp.Code == s3CodeSlowDown:
			return fmt.Errorf("blobstore: %s %s: %w: %w", op, key, ErrUnavailable, err)
		}
		return fmt.Errorf("blobstore: %s %s: %w", op, key, err)
	}
	if isTransportFailure(err) {
		return fmt.Errorf("blobstore: %s %s: %w: %w", op, key, ErrUnavailable, err)
	}
	return fmt.Errorf("blobstore: %s %s: %w", op, key, err)
}

func isS3NotFound(err error) bool {
	var resp minio.ErrorResponse
	return errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound && resp.Code != s3CodeNoSuchBucket
}

// isTransportFailure reports whether err means no HTTP response arrived (or
// a response broke off) for a reason that may pass: connection refused or
// reset, a timeout, a truncated body, a temporary DNS failure. A round trip
// that failed for a reason that will not pass by itself (an untrusted or
// mismatched certificate, TLS spoken to a plain HTTP server, an unknown
// host) is not one.
func isTransportFailure(err error) bool {
	var (
		dnsErr     *net.DNSError
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		urlErr     *url.Error
		netErr     net.Error
	)
	switch {
	case errors.As(err, &dnsErr):
		return dnsErr.IsTimeout || dnsErr.IsTemporary
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &invalidErr), errors.As(err, &recordErr):
		return false
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.As(err, &urlErr):
		// The HTTP client failed the round trip (the client library
		// rewrites some of these, e.g. a connection closed mid-response,
		// into untyped errors inside *url.Error); every lasting cause was
		// excluded above.
		return true
	}
	return false
}

// verifyingReader passes an object's body through, hashing it, and turns a
// body that ends at the wrong size or with the wrong hash into an error
// instead of io.EOF.
type verifyingReader struct {
	body io.ReadCloser
	ctx  context.Context
	key  string
	size int64
	n    int64
	h    hash.Hash
	err  error // sticky
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	// The HTTP client may already hold the rest of the body, in which case
	// the transport never sees the cancellation; check it here so that a
	// cancelled reader fails its next Read whatever is buffered.
	if ctxErr := v.ctx.Err(); ctxErr != nil {
		v.err = fmt.Errorf("blobstore: read %s: %w", v.key, ctxErr)
		return 0, v.err
	}
	n, err := v.body.Read(p)
	v.n += int64(n)
	v.h.Write(p[:n])
	switch {
	case err == io.EOF:
		if v.n != v.size {
			v.err = fmt.Errorf("%w: read %s: got %d bytes, want %d", ErrUnavailable, v.key, v.n, v.size)
		} else if got := hex.EncodeToString(v.h.Sum(nil)); got != v.key {
			v.err = fmt.Errorf("blobstore: read %s: stored content hashes to %s: blob is corrupt", v.key, got)
		} else {
			v.err = io.EOF
		}
	case err != nil:
		if ctxErr := v.ctx.Err(); ctxErr != nil {
			v.err = fmt.Errorf("blobstore: read %s: %w", v.key, ctxErr)
		} else if isTransportFailure(err) {
			v.err = fmt.Errorf("blobstore: read %s: %w: %w", v.key, ErrUnavailable, err)
		} else {
			v.err = fmt.Errorf("blobstore: read %s: %w", v.key, err)
		}
	}
	return n, v.err
}

func (v *verifyingReader) Close() error {
	return v.body.Close()
}
