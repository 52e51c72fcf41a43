package webhook_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/webhook"
)

// The test vector published with the Standard Webhooks libraries.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorUnix   = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t testing.TB) (webhook.Secret, string) {
	t.Helper()
	s, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	sec, err := webhook.ParseSecret(s)
	if err != nil {
		t.Fatalf("ParseSecret(NewSecret()): %v", err)
	}
	return sec, s
}

func TestSignKnownVector(t *testing.T) {
	t.Parallel()
	sec, err := webhook.ParseSecret(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(vectorUnix, 0)
	if got := webhook.Sign(vectorID, ts, []byte(vectorBody), sec); got != vectorSig {
		t.Fatalf("Sign = %q, want %q", got, vectorSig)
	}
	h := webhook.Headers(vectorID, ts, []byte(vectorBody), sec)
	if err := webhook.Verify(sec, h, []byte(vectorBody), ts.Add(time.Minute), 0); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestNewSecretFormat(t *testing.T) {
	t.Parallel()
	a, _ := mustSecret(t)
	_, s1 := mustSecret(t)
	_, s2 := mustSecret(t)
	if s1 == s2 {
		t.Fatal("two NewSecret calls returned the same secret")
	}
	enc, ok := strings.CutPrefix(s1, "whsec_")
	if !ok {
		t.Fatalf("secret %q lacks whsec_ prefix", s1)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) != 32 {
		t.Fatalf("secret body: %d bytes, err %v; want 32 bytes of base64", len(raw), err)
	}
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%v %+v %#v %s", a, a, a, a)} {
		if strings.Contains(s, enc) || !strings.Contains(s, "redacted") {
			t.Fatalf("formatting a Secret gave %q; want it redacted", s)
		}
	}
}

func TestParseSecretRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", // no prefix
		"whsec_",                           // empty
		"whsec_!!!notbase64!!!",            // not base64
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 8)),  // too short
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), // too long
	} {
		if _, err := webhook.ParseSecret(s); !errors.Is(err, webhook.ErrBadSecret) {
			t.Errorf("ParseSecret(%q) = %v, want ErrBadSecret", s, err)
		}
	}
	// Unpadded base64 is accepted.
	unpadded := "whsec_" + base64.RawStdEncoding.EncodeToString(make([]byte, 32))
	if _, err := webhook.ParseSecret(unpadded); err != nil {
		t.Errorf("ParseSecret(unpadded) = %v", err)
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	sec, _ := mustSecret(t)
	now := time.Now()
	body := []byte(`{"type":"document.processed","data":{"id":"doc_1","pages":3}}`)
	h := webhook.Headers("msg_1", now, body, sec)

	if got := h.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := h.Get("webhook-id"); got != "msg_1" {
		t.Errorf("webhook-id = %q", got)
	}
	if got := h.Get("webhook-timestamp"); got != strconv.FormatInt(now.Unix(), 10) {
		t.Errorf("webhook-timestamp = %q, want %d", got, now.Unix())
	}
	if got := h.Get("webhook-signature"); !strings.HasPrefix(got, "v1,") || strings.Contains(got, " ") {
		t.Errorf("webhook-signature = %q, want one v1 entry", got)
	}
	if err := webhook.Verify(sec, h, body, now, 0); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	other, _ := mustSecret(t)
	if err := webhook.Verify(other, h, body, now, 0); !errors.Is(err, webhook.ErrBadSignature) {
		t.Fatalf("Verify with another secret = %v, want ErrBadSignature", err)
	}
}

func TestRotationSignsWithBoth(t *testing.T) {
	t.Parallel()
	oldSec, _ := mustSecret(t)
	newSec, _ := mustSecret(t)
	third, _ := mustSecret(t)
	now := time.Now()
	body := []byte(`{"n":1}`)
	h := webhook.Headers("msg_rot", now, body, oldSec, newSec)

	entries := strings.Split(h.Get("webhook-signature"), " ")
	if len(entries) != 2 {
		t.Fatalf("signature header %q: want 2 entries", h.Get("webhook-signature"))
	}
	for i, s := range []webhook.Secret{oldSec, newSec} {
		if err := webhook.Verify(s, h, body, now, 0); err != nil {
			t.Errorf("secret %d: Verify: %v", i, err)
		}
		// Each entry on its own belongs to its secret only.
		single := h.Clone()
		single.Set("webhook-signature", entries[i])
		if err := webhook.Verify(s, single, body, now, 0); err != nil {
			t.Errorf("entry %d with its secret: %v", i, err)
		}
		if err := webhook.Verify([]webhook.Secret{newSec, oldSec}[i], single, body, now, 0); !errors.Is(err, webhook.ErrBadSignature) {
			t.Errorf("entry %d with the other secret: %v, want ErrBadSignature", i, err)
		}
	}
	if err := webhook.Verify(third, h, body, now, 0); !errors.Is(err, webhook.ErrBadSignature) {
		t.Errorf("unrelated secret: %v, want ErrBadSignature", err)
	}
	if got := webhook.Sign("x", now, body); got != "" {
		t.Errorf("Sign without secrets = %q, want empty", got)
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	sec, _ := mustSecret(t)
	now := time.Now()
	body := []byte(`{"a":1}`)
	good := webhook.Headers("msg_1", now, body, sec)

	with := func(name, value string) http.Header {
		h := good.Clone()
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return h
	}
	// Re-signed with the correct secret, but 10 minutes old: only the clock
	// check can reject it.
	old := webhook.Headers("msg_1", now.Add(-10*time.Minute), body, sec)
	future := webhook.Headers("msg_1", now.Add(10*time.Minute), body, sec)

	tests := []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{"tampered body", good, []byte(`{"a":2}`), webhook.ErrBadSignature},
		{"tampered id", with("webhook-id", "msg_2"), body, webhook.ErrBadSignature},
		{"tampered timestamp", with("webhook-timestamp", strconv.FormatInt(now.Unix()-1, 10)), body, webhook.ErrBadSignature},
		{"old timestamp", old, body, webhook.ErrTimestamp},
		{"future timestamp", future, body, webhook.ErrTimestamp},
		{"non-numeric timestamp", with("webhook-timestamp", "soon"), body, webhook.ErrBadSignature},
		{"missing id", with("webhook-id", ""), body, webhook.ErrBadSignature},
		{"missing timestamp", with("webhook-timestamp", ""), body, webhook.ErrBadSignature},
		{"missing signature", with("webhook-signature", ""), body, webhook.ErrBadSignature},
		{"unknown version only", with("webhook-signature", strings.Replace(good.Get("webhook-signature"), "v1,", "v2,", 1)), body, webhook.ErrBadSignature},
		{"garbage entry", with("webhook-signature", "v1,not*base64"), body, webhook.ErrBadSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := webhook.Verify(sec, tc.h, tc.body, now, 0); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}

	// A wider tolerance accepts the old delivery; a valid entry among
	// unknown ones is found.
	if err := webhook.Verify(sec, old, body, now, 15*time.Minute); err != nil {
		t.Errorf("old timestamp with 15m tolerance: %v", err)
	}
	mixed := with("webhook-signature", "v2,abc v1,AAAA "+good.Get("webhook-signature"))
	if err := webhook.Verify(sec, mixed, body, now, 0); err != nil {
		t.Errorf("valid entry among others: %v", err)
	}
	if err := webhook.Verify(webhook.Secret{}, good, body, now, 0); !errors.Is(err, webhook.ErrBadSecret) {
		t.Errorf("zero Secret: %v, want ErrBadSecret", err)
	}
}
