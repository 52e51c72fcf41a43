package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Signed handles.
//
// A handle is the opaque public name of something asynchronous: a job
// (GET /jobs/{jobId}) or an extraction session. It is a short kind prefix
// ("job_" or "ses_") followed by unpadded base64url of
//
//	version      1 byte  (handleVersion)
//	key id len   1 byte  (1..8)
//	key id       n bytes ([a-z0-9])
//	kind         1 byte  (one of the HandleKind* constants)
//	expiry       8 bytes (big-endian unix seconds; 0 = never expires)
//	subject len  1 byte  (0..200)
//	subject      n bytes
//	tag          16 bytes: HMAC-SHA256(secret, all of the above || org id), truncated
//
// The organization is bound by the MAC but not stored, so a handle leaks
// nothing about who owns it and another organization's handle simply fails
// to verify. The body is self-delimiting (every variable-length field has a
// length prefix and the whole must be consumed), so appending the org id to
// it is an unambiguous encoding of the pair.
//
// Tag length: 16 bytes (128 bits) is the RFC 2104 §5 recommendation for a
// truncated HMAC (no less than half the hash output, and at least 80 bits).
// Forging a handle without the key means guessing a tag: each guess costs an
// online, rate-limited request and succeeds with probability 2^-128, and
// truncating a PRF output leaks nothing about the key or the other tags. Tags
// are never compared by an attacker offline, so the birthday bound does not
// apply to forgery; 128 bits is far beyond any feasible number of requests.

// Handle kinds. The kind is signed into the handle and selects its prefix.
const (
	HandleKindBatchPreprocess    byte = 'p' // batch preprocess job (POST /documents/process)
	HandleKindDocumentPreprocess byte = 'd' // single-document preprocess job (document.* webhooks)
	HandleKindExtraction         byte = 'x' // extraction job (POST /extraction-sessions)
	HandleKindSession            byte = 's' // extraction session id
)

// ErrBadHandle is the one error Verify returns, whatever is wrong with the
// handle: forged, truncated, malformed, signed with an unknown or retired key,
// expired, or belonging to another organization. It wraps ErrNotFound, so it
// answers 404, and because it is a single value the responses are
// byte-for-byte identical and the endpoint is not an existence oracle.
var ErrBadHandle = fmt.Errorf("%w: unknown job or session", ErrNotFound)

const (
	handleVersion      = 1
	handleTagLen       = 16  // bytes of HMAC-SHA256 kept; see the tag length note above
	handleMaxKeyIDLen  = 8   // HandleKey.ID length limit
	handleMaxSubject   = 200 // Handle.Subject length limit, in bytes
	handleMinSecretLen = 32  // HandleKey.Secret minimum length, in bytes
	handlePrefixLen    = 4   // len("job_") == len("ses_")
	handleFixedLen     = 1 + 1 + 1 + 8 + 1 + handleTagLen
	handleMinRawLen    = handleFixedLen + 1 // one-byte key id, empty subject
	handleMaxRawLen    = handleFixedLen + handleMaxKeyIDLen + handleMaxSubject
	// handleMaxLen is the longest string Sign can produce (319); Verify
	// rejects anything longer before decoding, so hostile input is cheap.
	handleMaxLen = handlePrefixLen + (handleMaxRawLen*8+5)/6
)

// handleEncoding is strict so that every handle has exactly one spelling:
// non-zero trailing bits are rejected rather than silently dropped.
var handleEncoding = base64.RawURLEncoding.Strict()

// handlePrefix returns the public prefix for kind, or "" for an unknown kind.
func handlePrefix(kind byte) string {
	switch kind {
	case HandleKindBatchPreprocess, HandleKindDocumentPreprocess, HandleKindExtraction:
		return "job_"
	case HandleKindSession:
		return "ses_"
	}
	return ""
}

// HandleKey is one signing key. ID is short (1 to 8 characters of [a-z0-9])
// and is written into every handle, so keys can be rotated: a Signer verifies
// with any key it holds. Secret is at least 32 bytes and must be kept secret.
type HandleKey struct {
	ID     string
	Secret []byte
}

// String names the key without its secret, so a logged key leaks nothing.
func (k HandleKey) String() string { return "HandleKey(" + k.ID + ")" }

// GoString is String, so %#v does not print the secret either.
func (k HandleKey) GoString() string { return k.String() }

// Handle is what a handle names.
type Handle struct {
	// Kind is one of the HandleKind* constants.
	Kind byte
	// Subject is the internal id the handle stands for, e.g. a job id or a
	// document id and attempt; at most 200 bytes.
	Subject string
	// Expires is when the handle stops verifying, to the second (it is
	// truncated to whole seconds when signed). The zero value never expires.
	Expires time.Time
}

// SignerOption configures a Signer; pass options to NewSigner.
type SignerOption interface {
	apply(*signerConfig)
}

type signerConfig struct {
	now func() time.Time
}

type signerOptionFunc func(*signerConfig)

func (f signerOptionFunc) apply(c *signerConfig) { f(c) }

// WithClock sets the clock Verify checks expiry against. The default is
// time.Now; nil restores the default.
func WithClock(now func() time.Time) SignerOption {
	return signerOptionFunc(func(c *signerConfig) {
		if now == nil {
			now = time.Now
		}
		c.now = now
	})
}

// Signer signs and verifies handles. It is immutable after NewSigner and safe
// for concurrent use.
type Signer struct {
	signing handleKey
	keys    map[string][]byte // id -> secret, every key that verifies
	now     func() time.Time
}

type handleKey struct {
	id     string
	secret []byte
}

// NewSigner returns a Signer that signs with keys[0] and verifies with any of
// keys, so a key can be rotated in (put the new key first, keep the old one
// after it until its handles have expired or no longer matter) and out
// (drop it; its handles stop verifying). Key ids must be unique and valid, and
// every secret at least 32 bytes. The keys are copied.
//
// Options and their defaults: WithClock (time.Now).
func NewSigner(keys []HandleKey, opts ...SignerOption) (*Signer, error) {
	if err := validateHandleKeys(keys); err != nil {
		return nil, err
	}
	cfg := signerConfig{now: time.Now}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	s := &Signer{keys: make(map[string][]byte, len(keys)), now: cfg.now}
	for _, k := range keys {
		s.keys[k.ID] = append([]byte(nil), k.Secret...)
	}
	s.signing = handleKey{id: keys[0].ID, secret: s.keys[keys[0].ID]}
	return s, nil
}

func validateHandleKeys(keys []HandleKey) error {
	if len(keys) == 0 {
		return errors.New("api: no handle keys")
	}
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if !validHandleKeyID(k.ID) {
			return fmt.Errorf("api: handle key %d: id %q is not 1-%d characters of [a-z0-9]", i, k.ID, handleMaxKeyIDLen)
		}
		if seen[k.ID] {
			return fmt.Errorf("api: handle key %d: duplicate id %q", i, k.ID)
		}
		seen[k.ID] = true
		if len(k.Secret) < handleMinSecretLen {
			return fmt.Errorf("api: handle key %q: secret is %d bytes, need at least %d", k.ID, len(k.Secret), handleMinSecretLen)
		}
	}
	return nil
}

func validHandleKeyID(id string) bool {
	if len(id) == 0 || len(id) > handleMaxKeyIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Sign returns the handle for h, bound to org, signed with the signing key.
// Signing is deterministic: the same key, org and h give the same handle.
// A non-zero Expires at or before the Unix epoch is signed as already
// expired (1970-01-01T00:00:01Z).
//
// Sign panics if h.Kind is not a HandleKind* constant or h.Subject is longer
// than 200 bytes: both are programming errors, never client input.
func (s *Signer) Sign(org string, h Handle) string {
	prefix := handlePrefix(h.Kind)
	if prefix == "" {
		panic(fmt.Sprintf("api: Sign: unknown handle kind %q", h.Kind))
	}
	if len(h.Subject) > handleMaxSubject {
		panic(fmt.Sprintf("api: Sign: subject is %d bytes, limit %d", len(h.Subject), handleMaxSubject))
	}
	var exp int64
	if !h.Expires.IsZero() {
		exp = max(h.Expires.Unix(), 1)
	}
	raw := make([]byte, 0, handleMaxRawLen)
	raw = append(raw, handleVersion, byte(len(s.signing.id)))
	raw = append(raw, s.signing.id...)
	raw = append(raw, h.Kind)
	raw = binary.BigEndian.AppendUint64(raw, uint64(exp))
	raw = append(raw, byte(len(h.Subject)))
	raw = append(raw, h.Subject...)
	raw = appendHandleTag(raw, s.signing.secret, raw, org)

	out := make([]byte, 0, handleMaxLen)
	out = append(out, prefix...)
	out = handleEncoding.AppendEncode(out, raw)
	return string(out)
}

// appendHandleTag appends the truncated HMAC-SHA256 of body || org to dst.
func appendHandleTag(dst, secret, body []byte, org string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	io.WriteString(m, org)
	var sum [sha256.Size]byte
	return append(dst, m.Sum(sum[:0])[:handleTagLen]...)
}

// Verify returns what handle names if it is a handle this Signer's keys
// signed for org and it has not expired. Otherwise it returns ErrBadHandle,
// the same value for every failure (forged, truncated, malformed, unknown key,
// wrong kind prefix, expired, another organization's), which errors.Is
// reports as ErrNotFound. Verify never panics and rejects over-long input
// before decoding it.
func (s *Signer) Verify(org, handle string) (Handle, error) {
	if len(handle) > handleMaxLen || len(handle) < handlePrefixLen {
		return Handle{}, ErrBadHandle
	}
	prefix, enc := handle[:handlePrefixLen], handle[handlePrefixLen:]
	if prefix != "job_" && prefix != "ses_" {
		return Handle{}, ErrBadHandle
	}
	// The decoder skips '\r' and '\n'; insist on the bare alphabet so that a
	// handle has one spelling only.
	for i := 0; i < len(enc); i++ {
		if !isBase64URL(enc[i]) {
			return Handle{}, ErrBadHandle
		}
	}
	var buf [handleMaxRawLen]byte
	if handleEncoding.DecodedLen(len(enc)) > len(buf) {
		return Handle{}, ErrBadHandle
	}
	n, err := handleEncoding.Decode(buf[:], []byte(enc))
	if err != nil || n < handleMinRawLen {
		return Handle{}, ErrBadHandle
	}
	raw := buf[:n]
	body, tag := raw[:n-handleTagLen], raw[n-handleTagLen:]

	// Parse strictly: every length is checked before it is used to slice,
	// and the fields must consume the body exactly.
	if body[0] != handleVersion {
		return Handle{}, ErrBadHandle
	}
	kidLen := int(body[1])
	if kidLen < 1 || kidLen > handleMaxKeyIDLen {
		return Handle{}, ErrBadHandle
	}
	p := 2
	if len(body) < p+kidLen+1+8+1 {
		return Handle{}, ErrBadHandle
	}
	kid := body[p : p+kidLen]
	p += kidLen
	kind := body[p]
	p++
	exp := int64(binary.BigEndian.Uint64(body[p : p+8]))
	p += 8
	subLen := int(body[p])
	p++
	if subLen > handleMaxSubject || len(body)-p != subLen {
		return Handle{}, ErrBadHandle
	}
	subject := body[p:]

	secret, ok := s.keys[string(kid)]
	if !ok {
		return Handle{}, ErrBadHandle
	}
	var want [handleTagLen]byte
	if !hmac.Equal(appendHandleTag(want[:0], secret, body, org), tag) {
		return Handle{}, ErrBadHandle
	}
	// Authentic from here on; what remains are checks on signed values.
	if handlePrefix(kind) != prefix || exp < 0 {
		return Handle{}, ErrBadHandle
	}
	h := Handle{Kind: kind, Subject: string(subject)}
	if exp != 0 {
		h.Expires = time.Unix(exp, 0).UTC()
		if !s.now().Before(h.Expires) {
			return Handle{}, ErrBadHandle
		}
	}
	return h, nil
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// ParseHandleKeys parses the flag and environment format of handle keys,
// "kid:base64secret,kid2:base64secret", in which the first key signs and
// all of them verify. Secrets are base64, standard or URL-safe alphabet,
// with or without padding; spaces around entries are ignored. The keys are
// validated as NewSigner does. Error messages never contain a secret.
func ParseHandleKeys(s string) ([]HandleKey, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("api: no handle keys")
	}
	var keys []HandleKey
	for i, entry := range strings.Split(s, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok {
			return nil, fmt.Errorf("api: handle key %d: want kid:base64secret", i)
		}
		id, b64 = strings.TrimSpace(id), strings.TrimSpace(b64)
		secret, err := decodeHandleSecret(b64)
		if err != nil {
			return nil, fmt.Errorf("api: handle key %d (%q): secret is not valid base64", i, id)
		}
		keys = append(keys, HandleKey{ID: id, Secret: secret})
	}
	if err := validateHandleKeys(keys); err != nil {
		return nil, err
	}
	return keys, nil
}

func decodeHandleSecret(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	var enc *base64.Encoding
	switch {
	case strings.ContainsAny(s, "-_"):
		enc = base64.URLEncoding
	default:
		enc = base64.StdEncoding
	}
	if !strings.HasSuffix(s, "=") {
		enc = enc.WithPadding(base64.NoPadding)
	}
	return enc.Strict().DecodeString(s)
}

// FormatHandleKeys is the inverse of ParseHandleKeys: keys in the
// "kid:base64secret,..." format, standard padded base64. The result contains
// the secrets; store it as such.
func FormatHandleKeys(keys []HandleKey) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.ID)
		b.WriteByte(':')
		b.WriteString(base64.StdEncoding.EncodeToString(k.Secret))
	}
	return b.String()
}

// NewHandleKey returns a new key with the given id and a random 32-byte
// secret from crypto/rand, for embedded mode, where the caller stores it in
// the data directory (FormatHandleKeys) so handles survive restarts.
func NewHandleKey(id string) (HandleKey, error) {
	if !validHandleKeyID(id) {
		return HandleKey{}, fmt.Errorf("api: handle key id %q is not 1-%d characters of [a-z0-9]", id, handleMaxKeyIDLen)
	}
	secret := make([]byte, handleMinSecretLen)
	if _, err := rand.Read(secret); err != nil {
		return HandleKey{}, fmt.Errorf("api: handle key: %w", err)
	}
	return HandleKey{ID: id, Secret: secret}, nil
}
