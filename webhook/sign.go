package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks specification.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

const (
	// SecretPrefix starts every serialised secret.
	SecretPrefix = "whsec_"
	// DefaultTolerance is how far webhook-timestamp may be from the
	// receiver's clock, in either direction, when Verify is given 0.
	DefaultTolerance = 5 * time.Minute

	// Key lengths the specification recommends (24 to 64 bytes).
	minSecretBytes = 24
	maxSecretBytes = 64
	newSecretBytes = 32

	signatureVersion = "v1"
)

// Secret is an endpoint's signing key, the raw bytes behind "whsec_…". Its
// String method does not reveal the key, so a Secret that ends up in a log
// line or an error stays secret. The zero Secret is not usable.
type Secret struct {
	key []byte
}

// NewSecret returns a new random secret: "whsec_" followed by the standard
// base64 of 32 random bytes. Store it; give it to the endpoint's owner once.
func NewSecret() (string, error) {
	b := make([]byte, newSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: new secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// ParseSecret reads "whsec_<base64>" (standard alphabet, padding optional).
// The key must be 24 to 64 bytes long, as the specification recommends;
// NewSecret makes 32.
func ParseSecret(s string) (Secret, error) {
	enc, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return Secret{}, fmt.Errorf("%w: missing %q prefix", ErrBadSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(enc)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("%w: not base64", ErrBadSecret)
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return Secret{}, fmt.Errorf("%w: key is %d bytes, want %d to %d",
			ErrBadSecret, len(key), minSecretBytes, maxSecretBytes)
	}
	return Secret{key: key}, nil
}

// String hides the key.
func (s Secret) String() string { return SecretPrefix + "[redacted]" }

// GoString hides the key from %#v too.
func (s Secret) GoString() string { return "webhook.Secret{[redacted]}" }

// sign returns the raw HMAC-SHA256 of id.timestamp.body.
func (s Secret) sign(id string, unix int64, body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, unix, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Sign returns the webhook-signature header value for one delivery: one
// "v1,<base64>" entry per secret, separated by spaces, in the order given.
// During a rotation pass both the old and the new secret; a receiver that
// knows either accepts the delivery. Only the Unix second of ts is signed.
// With no secrets Sign returns "".
func Sign(id string, ts time.Time, body []byte, secrets ...Secret) string {
	unix := ts.Unix()
	var b strings.Builder
	for i, s := range secrets {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(signatureVersion)
		b.WriteByte(',')
		b.WriteString(base64.StdEncoding.EncodeToString(s.sign(id, unix, body)))
	}
	return b.String()
}

// Headers returns the headers of one delivery: webhook-id, webhook-timestamp
// (Unix seconds), webhook-signature (see Sign) and Content-Type
// application/json. The same id must be reused on every retry of the
// delivery, so that receivers can drop duplicates; the timestamp and the
// signatures are renewed per attempt.
func Headers(id string, ts time.Time, body []byte, secrets ...Secret) http.Header {
	h := make(http.Header, 4)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(id, ts, body, secrets...))
	h.Set("Content-Type", "application/json")
	return h
}

// Verify checks a received delivery: the three headers must be present,
// webhook-timestamp must be within tolerance of now (DefaultTolerance if
// tolerance <= 0, in either direction) and at least one "v1" entry of
// webhook-signature must match body under secret. Entries of other versions
// are ignored. Signatures are compared in constant time. body must be the raw
// request body, not a re-encoding of it.
//
// The error wraps ErrBadSignature (missing or malformed headers, no match)
// or ErrTimestamp.
func Verify(secret Secret, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if len(secret.key) == 0 {
		return fmt.Errorf("%w: empty secret", ErrBadSecret)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id, tsHeader, sigHeader := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsHeader == "" || sigHeader == "" {
		return fmt.Errorf("%w: missing %s, %s or %s header",
			ErrBadSignature, HeaderID, HeaderTimestamp, HeaderSignature)
	}
	unix, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not an integer", ErrBadSignature, HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s is %s from now, tolerance %s",
			ErrTimestamp, HeaderTimestamp, d.Truncate(time.Second), tolerance)
	}
	want := secret.sign(id, unix, body)
	matched := false
	for _, entry := range strings.Fields(sigHeader) {
		version, enc, ok := strings.Cut(entry, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			continue
		}
		// Every entry is compared, match or not, so the time taken does not
		// depend on which entry matched.
		if hmac.Equal(got, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("%w: no matching %s signature", ErrBadSignature, signatureVersion)
	}
	return nil
}
