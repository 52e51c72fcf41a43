package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/webhook"
)

const verifyDir = "testdata/verify"

// TestReferenceLibraryVerifies checks the signatures against the reference
// JavaScript implementation, npm package standardwebhooks (pinned in
// testdata/verify/package.json), run by testdata/verify/verify.js.
func TestReferenceLibraryVerifies(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; install Node.js 20+, then run `npm ci --prefix webhook/testdata/verify` from the repository root")
	}
	if _, err := os.Stat(filepath.Join(verifyDir, "node_modules", "standardwebhooks")); err != nil {
		t.Skip("reference library not installed; run `npm ci --prefix webhook/testdata/verify` from the repository root")
	}

	oldSec, oldStr := mustSecret(t)
	newSec, newStr := mustSecret(t)
	vector, err := webhook.ParseSecret(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := `{"type":"document.processed","timestamp":"2026-01-02T03:04:05Z","data":{"id":"doc_01","name":"Straße – 請求書 ✓","pages":3}}`

	headers := func(id string, ts time.Time, body string, secrets ...webhook.Secret) map[string]string {
		h := webhook.Headers(id, ts, []byte(body), secrets...)
		m := map[string]string{}
		for k := range h {
			m[k] = h.Get(k) // canonical names; the library lower-cases them
		}
		return m
	}
	tamper := headers("msg_tamper", now, body, newSec)

	tests := []struct {
		name    string
		secret  string
		headers map[string]string
		body    string
		ok      bool
		reason  string // expected in the library's message when !ok
	}{
		{"single secret", newStr, headers("msg_single", now, body, newSec), body, true, ""},
		{"spec test vector secret", vectorSecret, headers("msg_p5jXN8AQM9LWM0D4loKWxJek", now, `{"test": 2432232314}`, vector), `{"test": 2432232314}`, true, ""},
		{"empty object body", newStr, headers("msg_empty", now, `{}`, newSec), `{}`, true, ""},
		{"rotation, old secret", oldStr, headers("msg_rot", now, body, oldSec, newSec), body, true, ""},
		{"rotation, new secret", newStr, headers("msg_rot", now, body, oldSec, newSec), body, true, ""},
		{"timestamp 4 minutes old", newStr, headers("msg_recent", now.Add(-4*time.Minute), body, newSec), body, true, ""},
		{"tampered body", newStr, tamper, strings.Replace(body, `"pages":3`, `"pages":4`, 1), false, "No matching signature"},
		{"tampered id", newStr, func() map[string]string {
			m := headers("msg_id", now, body, newSec)
			m["Webhook-Id"] = "msg_other"
			return m
		}(), body, false, "No matching signature"},
		{"old timestamp", newStr, headers("msg_old", now.Add(-10*time.Minute), body, newSec), body, false, "too old"},
		{"future timestamp", newStr, headers("msg_future", now.Add(10*time.Minute), body, newSec), body, false, "too new"},
		{"wrong secret", oldStr, headers("msg_wrong", now, body, newSec), body, false, "No matching signature"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, err := json.Marshal(map[string]any{"secret": tc.secret, "headers": tc.headers, "body": tc.body})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "verify.js")
			cmd.Dir = verifyDir
			cmd.Stdin = bytes.NewReader(in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err = cmd.Run()
			code := 0
			var exit *exec.ExitError
			switch {
			case errors.As(err, &exit):
				code = exit.ExitCode()
			case err != nil:
				t.Fatalf("running node: %v", err)
			}
			switch {
			case tc.ok && code != 0:
				t.Fatalf("reference library rejected a valid delivery (exit %d): %s", code, stderr.String())
			case !tc.ok && code != 1:
				t.Fatalf("exit %d, want 1 (verification failed): %s", code, stderr.String())
			case !tc.ok && !strings.Contains(stderr.String(), tc.reason):
				t.Fatalf("rejected for %q, want %q", strings.TrimSpace(stderr.String()), tc.reason)
			}
		})
	}
}
