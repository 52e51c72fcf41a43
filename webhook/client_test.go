package webhook_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docket/docket/webhook"
)

func TestValidateURL(t *testing.T) {
	t.Parallel()
	type policy struct{ private, loopback bool }
	deflt, loop, priv := policy{}, policy{loopback: true}, policy{private: true}
	tests := []struct {
		url  string
		p    policy
		want error // nil: allowed
	}{
		// Shape.
		{"https://hooks.example.com/docket", deflt, nil},
		{"http://hooks.example.com:8080/x?token=abc", deflt, nil},
		{"HTTPS://hooks.example.com/", deflt, nil},
		{"ftp://hooks.example.com/", deflt, webhook.ErrBadURL},
		{"file:///etc/passwd", deflt, webhook.ErrBadURL},
		{"gopher://hooks.example.com/", deflt, webhook.ErrBadURL},
		{"javascript:alert(1)", deflt, webhook.ErrBadURL},
		{"hooks.example.com/path", deflt, webhook.ErrBadURL},
		{"http:hooks.example.com", deflt, webhook.ErrBadURL},
		{"https://", deflt, webhook.ErrBadURL},
		{"https:///path", deflt, webhook.ErrBadURL},
		{"https://user:pass@hooks.example.com/", deflt, webhook.ErrBadURL},
		{"https://user@hooks.example.com/", deflt, webhook.ErrBadURL},
		{"https://hooks.example.com:0/", deflt, webhook.ErrBadURL},
		{"https://hooks.example.com:70000/", deflt, webhook.ErrBadURL},
		{"http://%zz/", deflt, webhook.ErrBadURL},
		{"http://2130706433/", deflt, webhook.ErrBadURL},
		{"http://127.1/", deflt, webhook.ErrBadURL},
		{"http://0x7f.0.0.1/", deflt, webhook.ErrBadURL},
		// Literal addresses, default policy.
		{"http://10.0.0.1/", deflt, webhook.ErrRefusedAddress},
		{"http://172.16.0.1/", deflt, webhook.ErrRefusedAddress},
		{"http://172.31.255.255/", deflt, webhook.ErrRefusedAddress},
		{"http://192.168.1.1/", deflt, webhook.ErrRefusedAddress},
		{"http://100.64.0.1/", deflt, webhook.ErrRefusedAddress},
		{"http://169.254.169.254/latest/meta-data/", deflt, webhook.ErrRefusedAddress},
		{"http://127.0.0.1:8080/", deflt, webhook.ErrRefusedAddress},
		{"http://[::1]/", deflt, webhook.ErrRefusedAddress},
		{"http://[fd00::1]/", deflt, webhook.ErrRefusedAddress},
		{"http://[fe80::1%25eth0]/", deflt, webhook.ErrRefusedAddress},
		{"http://[::ffff:127.0.0.1]/", deflt, webhook.ErrRefusedAddress},
		{"http://[::ffff:169.254.169.254]/", deflt, webhook.ErrRefusedAddress},
		{"http://[::ffff:10.0.0.1]/", deflt, webhook.ErrRefusedAddress},
		{"http://[64:ff9b::a9fe:a9fe]/", deflt, webhook.ErrRefusedAddress}, // NAT64 of 169.254.169.254
		{"http://[2002:7f00:1::]/", deflt, webhook.ErrRefusedAddress},      // 6to4 of 127.0.0.1
		{"http://0.0.0.0/", deflt, webhook.ErrRefusedAddress},
		{"http://[::]/", deflt, webhook.ErrRefusedAddress},
		{"http://224.0.0.1/", deflt, webhook.ErrRefusedAddress},
		{"http://[ff02::1]/", deflt, webhook.ErrRefusedAddress},
		{"http://255.255.255.255/", deflt, webhook.ErrRefusedAddress},
		// Public-looking addresses pass (only validated, never connected to).
		{"http://93.184.216.34/", deflt, nil},
		{"https://[2606:2800:220:1:248:1893:25c8:1946]/", deflt, nil},
		{"http://[::ffff:93.184.216.34]/", deflt, nil},
		{"http://172.32.0.1/", deflt, nil},
		// Host names pass; the Client checks what they resolve to.
		{"http://localhost/", deflt, nil},
		// AllowLoopback: loopback only.
		{"http://127.0.0.1:8080/", loop, nil},
		{"http://[::1]/", loop, nil},
		{"http://[::ffff:127.0.0.1]/", loop, nil},
		{"http://10.0.0.1/", loop, webhook.ErrRefusedAddress},
		{"http://169.254.169.254/", loop, webhook.ErrRefusedAddress},
		{"http://0.0.0.0/", loop, webhook.ErrRefusedAddress},
		// AllowPrivate: every non-public range but the never-valid ones.
		{"http://10.0.0.1/", priv, nil},
		{"http://127.0.0.1/", priv, nil},
		{"http://100.64.0.1/", priv, nil},
		{"http://[fd00::1]/", priv, nil},
		{"http://0.0.0.0/", priv, webhook.ErrRefusedAddress},
		{"http://224.0.0.1/", priv, webhook.ErrRefusedAddress},
		{"https://user:pass@10.0.0.1/", priv, webhook.ErrBadURL},
	}
	for _, tc := range tests {
		err := webhook.ValidateURL(tc.url, tc.p.private, tc.p.loopback)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("ValidateURL(%q, private=%v, loopback=%v) = %v, want nil", tc.url, tc.p.private, tc.p.loopback, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("ValidateURL(%q, private=%v, loopback=%v) = %v, want %v", tc.url, tc.p.private, tc.p.loopback, err, tc.want)
		case tc.want != nil && !webhook.IsRefused(err):
			t.Errorf("IsRefused(%v) = false", err)
		}
	}
}

// server starts a loopback test server running h and counts its requests.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", srv.URL)
	}
	return srv, &n
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

func deliver(t *testing.T, c *webhook.Client, url string) webhook.Result {
	t.Helper()
	sec, _ := mustSecret(t)
	body := []byte(`{"type":"test"}`)
	return c.Deliver(context.Background(), url, webhook.Headers("msg_t", time.Now(), body, sec), body)
}

func TestDeliverRefusesLoopbackByDefault(t *testing.T) {
	t.Parallel()
	srv, n := server(t, status(http.StatusOK))
	res := deliver(t, webhook.NewClient(), srv.URL)
	if res.Outcome != webhook.OutcomeRefused || !errors.Is(res.Err, webhook.ErrRefusedAddress) {
		t.Fatalf("Deliver = %+v, want refused address", res)
	}
	if res.Status != 0 || n.Load() != 0 {
		t.Fatalf("status %d, %d requests reached the server; want none", res.Status, n.Load())
	}
}

func TestDeliverRefusesLocalhostAtDialTime(t *testing.T) {
	t.Parallel()
	srv, n := server(t, status(http.StatusOK))
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	// The name itself passes registration; only its resolved address is
	// refused, when connecting.
	if err := webhook.ValidateURL(url, false, false); err != nil {
		t.Fatalf("ValidateURL(%q) = %v", url, err)
	}
	res := deliver(t, webhook.NewClient(), url)
	if res.Outcome != webhook.OutcomeRefused || !errors.Is(res.Err, webhook.ErrRefusedAddress) {
		t.Fatalf("Deliver(%s) = %+v, want refused at dial time", url, res)
	}
	if n.Load() != 0 {
		t.Fatalf("%d requests reached the server", n.Load())
	}
	// AllowLoopback lets the same name through.
	if res := deliver(t, webhook.NewClient(webhook.AllowLoopback(true)), url); res.Outcome != webhook.OutcomeDelivered {
		t.Fatalf("with AllowLoopback: %+v", res)
	}
}

func TestDeliverAllowLoopback(t *testing.T) {
	t.Parallel()
	var got atomic.Pointer[http.Request]
	var gotBody atomic.Pointer[[]byte]
	srv, n := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(r)
		gotBody.Store(&b)
		w.WriteHeader(http.StatusNoContent)
	})
	sec, _ := mustSecret(t)
	body := []byte(`{"type":"document.processed"}`)
	now := time.Now()
	h := webhook.Headers("msg_ok", now, body, sec)
	h.Set("User-Agent", "caller/0")
	res := webhook.NewClient(webhook.AllowLoopback(true)).Deliver(context.Background(), srv.URL+"/hook", h, body)
	if res.Outcome != webhook.OutcomeDelivered || res.Status != http.StatusNoContent || res.Err != nil {
		t.Fatalf("Deliver = %+v", res)
	}
	if res.Latency <= 0 || n.Load() != 1 {
		t.Fatalf("latency %v, %d requests", res.Latency, n.Load())
	}
	r := got.Load()
	if r.Method != http.MethodPost || r.URL.Path != "/hook" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if ua := r.Header.Get("User-Agent"); ua != webhook.DefaultUserAgent {
		t.Errorf("User-Agent %q, want %q", ua, webhook.DefaultUserAgent)
	}
	if h.Get("User-Agent") != "caller/0" {
		t.Errorf("Deliver modified the caller's headers")
	}
	if err := webhook.Verify(sec, r.Header, *gotBody.Load(), time.Now(), 0); err != nil {
		t.Errorf("receiver could not verify the delivery: %v", err)
	}
	// Other private ranges stay refused with AllowLoopback.
	if res := deliver(t, webhook.NewClient(webhook.AllowLoopback(true)), "http://10.0.0.1:9/"); res.Outcome != webhook.OutcomeRefused {
		t.Errorf("10.0.0.1 with AllowLoopback: %+v", res)
	}
	// So does AllowPrivate, which includes loopback.
	if res := deliver(t, webhook.NewClient(webhook.AllowPrivate(true), webhook.UserAgent("x/2")), srv.URL); res.Outcome != webhook.OutcomeDelivered {
		t.Errorf("with AllowPrivate: %+v", res)
	}
	if ua := got.Load().Header.Get("User-Agent"); ua != "x/2" {
		t.Errorf("User-Agent %q, want x/2", ua)
	}
}

func TestDeliverStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		h          http.HandlerFunc
		status     int
		outcome    webhook.Outcome
		retryAfter time.Duration
	}{
		{"200", status(200), 200, webhook.OutcomeDelivered, 0},
		{"202", status(202), 202, webhook.OutcomeDelivered, 0},
		{"410 gone", status(410), 410, webhook.OutcomeGone, 0},
		{"503 retry-after seconds", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(503)
		}, 503, webhook.OutcomeRetry, 7 * time.Second},
		{"429", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(429)
		}, 429, webhook.OutcomeRetry, 2 * time.Minute},
		{"429 without retry-after", status(429), 429, webhook.OutcomeRetry, 0},
		{"408", status(408), 408, webhook.OutcomeRetry, 0},
		{"500", status(500), 500, webhook.OutcomeRetry, 0},
		{"400", status(400), 400, webhook.OutcomeRetry, 0},
		{"401", status(401), 401, webhook.OutcomeRetry, 0},
		{"404", status(404), 404, webhook.OutcomeRetry, 0},
		{"garbage retry-after", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "soon")
			w.WriteHeader(503)
		}, 503, webhook.OutcomeRetry, 0},
		{"huge retry-after", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "99999999999999999")
			w.WriteHeader(503)
		}, 503, webhook.OutcomeRetry, webhook.MaxRetryAfter},
	}
	c := webhook.NewClient(webhook.AllowLoopback(true))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, n := server(t, tc.h)
			res := deliver(t, c, srv.URL)
			if res.Status != tc.status || res.Outcome != tc.outcome || res.RetryAfter != tc.retryAfter {
				t.Fatalf("Deliver = %+v; want status %d, %v, RetryAfter %v", res, tc.status, tc.outcome, tc.retryAfter)
			}
			if (res.Err == nil) != (tc.outcome == webhook.OutcomeDelivered) {
				t.Fatalf("Err = %v for %v", res.Err, res.Outcome)
			}
			if res.Err != nil && !errors.Is(res.Err, webhook.ErrStatus) {
				t.Fatalf("Err = %v, want ErrStatus", res.Err)
			}
			if n.Load() != 1 {
				t.Fatalf("%d requests, want 1", n.Load())
			}
		})
	}
}

func TestDeliverRetryAfterDate(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	res := deliver(t, webhook.NewClient(webhook.AllowLoopback(true)), srv.URL)
	if res.Outcome != webhook.OutcomeRetry || res.RetryAfter < 85*time.Second || res.RetryAfter > 90*time.Second {
		t.Fatalf("Deliver = %+v, want retry after about 90s", res)
	}
}

func TestDeliverDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Int64
	srv, n := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Add(1)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	res := deliver(t, webhook.NewClient(webhook.AllowLoopback(true)), srv.URL+"/hook")
	if res.Outcome != webhook.OutcomeRetry || res.Status != http.StatusTemporaryRedirect || !errors.Is(res.Err, webhook.ErrStatus) {
		t.Fatalf("Deliver = %+v, want retry with status 307", res)
	}
	if n.Load() != 1 || followed.Load() != 0 {
		t.Fatalf("%d requests, %d to the redirect target; want 1 and 0", n.Load(), followed.Load())
	}
}

func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		// Reading the body first lets the server notice the client hanging
		// up, which cancels r.Context().
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	c := webhook.NewClient(webhook.AllowLoopback(true), webhook.Timeout(200*time.Millisecond))
	start := time.Now()
	res := deliver(t, c, srv.URL)
	if res.Outcome != webhook.OutcomeRetry || res.Status != 0 || !webhook.IsTimeout(res.Err) || !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("Deliver = %+v, want retry with a timeout error", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Deliver took %v with a 200ms timeout", d)
	}
	if strings.Contains(res.Err.Error(), srv.URL) {
		t.Errorf("error %q repeats the URL", res.Err)
	}
}

func TestDeliverConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	res := deliver(t, webhook.NewClient(webhook.AllowLoopback(true)), url)
	if res.Outcome != webhook.OutcomeRetry || res.Err == nil || webhook.IsRefused(res.Err) {
		t.Fatalf("Deliver = %+v, want retry with a connection error", res)
	}
}

func TestDeliverReadsResponseOnlyUpToLimit(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	const huge = 512 << 20 // far more than socket buffers hold
	var written atomic.Int64
	done := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 32<<10)
		for written.Load() < huge {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return // the client hung up
			}
		}
	})
	c := webhook.NewClient(webhook.AllowLoopback(true), webhook.MaxResponseBytes(limit), webhook.Timeout(30*time.Second))
	res := deliver(t, c, srv.URL)
	if res.Outcome != webhook.OutcomeDelivered || res.Status != http.StatusOK {
		t.Fatalf("Deliver = %+v", res)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("server still writing 20s after Deliver returned")
	}
	if w := written.Load(); w >= huge {
		t.Fatalf("server wrote all %d bytes; the client read past its limit", w)
	}
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for o, want := range map[webhook.Outcome]string{
		webhook.OutcomeDelivered: "delivered",
		webhook.OutcomeRetry:     "retry",
		webhook.OutcomeGone:      "gone",
		webhook.OutcomeRefused:   "refused",
		webhook.Outcome(0):       "Outcome(0)",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
}
