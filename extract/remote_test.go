package extract

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// service starts a real HTTP server on loopback whose handler answers
// attempt n (from 1) with respond(n, w, r).
func service(t *testing.T, respond func(n int32, w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond(n.Add(1), w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func remoteInput() Input {
	return Input{Doc: &Document{ContentType: ctPDF, Pages: 2, Text: "page one\fpage two"}, Data: []byte("%PDF-1.7 bytes"), FileName: "inv.pdf"}
}

func TestRemoteContract(t *testing.T) {
	t.Parallel()
	srv, n := service(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		var req remoteRequest
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if req.FileName != "inv.pdf" || req.ContentType != ctPDF || req.NumPages != 2 || req.Text != "page one\fpage two" || string(req.Data) != "%PDF-1.7 bytes" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"currency":"eur","line_items":[{"description":"Widget  A","quantity":2,"unit_price":1.5,"amount":3},{"amount":-4.25}]}`))
	})
	r, err := NewRemote(srv.URL + "/extract")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := r.ExtractItems(context.Background(), remoteInput())
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{{"Widget A", 2, 1.5, 3}, {"", 0, 0, -4.25}}
	if inv.Currency != "EUR" || len(inv.Items) != 2 || inv.Items[0] != want[0] || inv.Items[1] != want[1] || n.Load() != 1 {
		t.Errorf("got %+v after %d requests", inv, n.Load())
	}
}

func TestRemoteRetries5xx(t *testing.T) {
	t.Parallel()
	srv, n := service(t, func(n int32, w http.ResponseWriter, _ *http.Request) {
		if n < 3 {
			http.Error(w, "busy", []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}[n-1])
			return
		}
		w.Write([]byte(`{"currency":null,"line_items":[]}`))
	})
	r, _ := NewRemote(srv.URL, RemoteBackoff(time.Millisecond))
	inv, err := r.ExtractItems(context.Background(), remoteInput())
	if err != nil || inv.Currency != "" || len(inv.Items) != 0 || n.Load() != 3 {
		t.Errorf("got %+v, %v after %d requests; want success on the third", inv, err, n.Load())
	}
}

func TestRemoteFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		status   int
		body     string
		want     string
		attempts int32
	}{
		{"5xx until the retries are spent", 502, "", CodeInternal, 3},
		{"not JSON", 200, "<html>", CodeInternal, 1},
		{"no line_items", 200, `{"currency":"USD"}`, CodeInternal, 1},
		{"item without amount", 200, `{"line_items":[{"description":"x"}]}`, CodeInternal, 1},
		{"bad currency", 200, `{"currency":"dollars","line_items":[]}`, CodeInternal, 1},
		{"document error", 422, `{"error":{"code":"corrupt_document","message":"cannot read"}}`, CodeCorruptDocument, 1},
		{"unknown error code", 422, `{"error":{"code":"gpu_on_fire","message":"x"}}`, CodeInternal, 1},
		{"422 without error", 422, `{}`, CodeInternal, 1},
		{"other status", 404, "not found", CodeInternal, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, n := service(t, func(_ int32, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			})
			r, _ := NewRemote(srv.URL, RemoteRetries(2), RemoteBackoff(time.Millisecond))
			_, err := r.ExtractItems(context.Background(), remoteInput())
			var e *Error
			if Code(err) != tc.want || !errors.As(err, &e) || n.Load() != tc.attempts {
				t.Errorf("got %v (code %s) after %d requests; want %s after %d", err, Code(err), n.Load(), tc.want, tc.attempts)
			}
		})
	}
}

// A hung service: each attempt is cut at the per-attempt timeout and
// retried; the document's own deadline ends it with "timeout".
func TestRemoteTimeouts(t *testing.T) {
	t.Parallel()
	srv, n := service(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		// The server notices a client that gave up only once the body is
		// read; the hang is bounded so that Close never waits long.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	// The per-attempt timeout must outlast getting a request to the
	// handler, which counts it: at 20 ms, under the race detector on two
	// busy cores, a second attempt once timed out before it arrived (CI,
	// 2026-12-07), and the server counted one.
	r, _ := NewRemote(srv.URL, RemoteTimeout(250*time.Millisecond), RemoteRetries(1), RemoteBackoff(time.Millisecond))
	if _, err := r.ExtractItems(context.Background(), remoteInput()); Code(err) != CodeInternal || n.Load() != 2 {
		t.Errorf("per-attempt timeouts: %v after %d requests, want internal_error after 2", err, n.Load())
	}
	r, _ = NewRemote(srv.URL, RemoteTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.ExtractItems(ctx, remoteInput()); Code(err) != CodeTimeout {
		t.Errorf("document deadline: %v, want timeout", err)
	}
}

func TestRemoteUnreachableAndBadURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there any more
	r, _ := NewRemote(addr, RemoteRetries(1), RemoteBackoff(time.Millisecond))
	if _, err := r.ExtractItems(context.Background(), remoteInput()); Code(err) != CodeInternal {
		t.Errorf("refused connection: %v", err)
	}
	for _, u := range []string{"", "ftp://x/y", "http://", "localhost:8080/x"} {
		if _, err := NewRemote(u); !errors.Is(err, ErrRemoteURL) {
			t.Errorf("NewRemote(%q) = %v", u, err)
		}
	}
}
