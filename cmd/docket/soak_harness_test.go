package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// soakNode is one docket process (all roles, embedded broker persisted in
// its data dir) that the soak kills with SIGKILL and starts again on the
// same data dir and HTTP address.
type soakNode struct {
	t       *testing.T
	dataDir string
	listen  string
	logPath string
	args    []string
	cmd     *exec.Cmd
	done    chan struct{}
}

func newSoakNode(t *testing.T) *soakNode {
	t.Helper()
	// A fixed HTTP address for the whole soak, so clients keep one URL
	// across restarts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	s := &soakNode{t: t, dataDir: t.TempDir(), listen: listen, logPath: filepath.Join(t.TempDir(), "docket.log")}
	s.args = []string{"serve", "--data-dir", s.dataDir, "--listen", listen, "--broker-listen", "127.0.0.1:0",
		"--partitions", "4", "--worker-concurrency", "4", "--webhook-allow-loopback",
		"--webhook-schedule", "0s,200ms,500ms,1s,1s,2s,2s,2s,2s,2s,2s,2s",
		"--rate", "1000000", "--status-rate", "1000000", "--ip-rate", "1000000", "--log-level", "warn"}
	return s
}

// start runs the process and waits until /readyz answers 200 (the views
// caught up with the log as it was at start).
func (s *soakNode) start() {
	s.t.Helper()
	s.cmd, s.done = startDocket(s.t, s.logPath, s.args)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			s.t.Fatalf("docket exited during start:\n%s", tail(s.logPath))
		default:
		}
		if resp, err := http.Get("http://" + s.listen + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond) // polling a child process's start-up; nothing to subscribe to
	}
	s.t.Fatalf("docket not ready:\n%s", tail(s.logPath))
}

func (s *soakNode) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func (s *soakNode) key() string {
	b, err := os.ReadFile(filepath.Join(s.dataDir, "api-key"))
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// soakClient talks to the node the way a careful client does: every write
// carries an Idempotency-Key and is retried with the same key while the node
// is down or answers 5xx.
type soakClient struct {
	base, key string
	hc        *http.Client
}

var errAbandoned = errors.New("soak: gave up (idempotency key held by a request cut off by a kill)")

func (c *soakClient) once(method, path string, body []byte, ct, idem string) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// do retries until an answer below 500 arrives or limit passes. A 409 for
// an idempotency key means the first attempt was cut off mid-flight; its
// claim outlives the kill by a minute, so the client gives up on it (the
// final sweep takes care of what it may have left).
func (c *soakClient) do(method, path string, body []byte, ct, idem string, out any) (int, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, raw, err := c.once(method, path, body, ct, idem)
		switch {
		case err == nil && code == http.StatusConflict && idem != "":
			return code, errAbandoned
		case err == nil && code < 500:
			if out != nil && len(raw) > 0 {
				if err := json.Unmarshal(raw, out); err != nil {
					return code, fmt.Errorf("%s %s: decode %q: %w", method, path, raw, err)
				}
			}
			return code, nil
		}
		if time.Now().After(deadline) {
			return code, fmt.Errorf("%s %s: no answer below 500 (last %d %v %s)", method, path, code, err, raw)
		}
		time.Sleep(100 * time.Millisecond) // the node is restarting; retry as a client would
	}
}

func (c *soakClient) upload(path, name, idem string, content []byte, out any) (int, error) {
	var buf bytes.Buffer
	body, ct := multipartFor(&buf, name, content)
	return c.do("POST", path, body, ct, idem, out)
}

func (c *soakClient) postJSON(path string, v any, idem string, out any) (int, error) {
	b, _ := json.Marshal(v)
	return c.do("POST", path, b, "application/json", idem, out)
}

// receiver is the webhook endpoint of the soak: it answers 200 and counts
// every delivery by webhook-id.
type receiver struct {
	mu  sync.Mutex
	got map[string]int
	srv *http.Server
	url string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{got: map[string]int{}, url: "http://" + ln.Addr().String() + "/hook"}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.got[req.Header.Get("webhook-id")]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.srv.Shutdown(ctx)
	})
	return r
}

func (r *receiver) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

// multipartFor builds an upload body with one file part into buf.
func multipartFor(buf *bytes.Buffer, name string, content []byte) ([]byte, string) {
	mw := multipart.NewWriter(buf)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(content)
	_ = mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}
