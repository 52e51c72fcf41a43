package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHostileJSONBodies sends every JSON-taking endpoint bodies built to
// hurt a parser: deep nesting, a huge body, truncation, invalid UTF-8,
// duplicate and unknown keys, the wrong content type. Each answer is a 4xx
// envelope and the log does not move.
func TestHostileJSONBodies(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback = true })
	auth := "Bearer " + tn.key
	if _, code := tn.upload("j", "a.txt", textInvoice(1), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	before := tn.logEnd()
	endpoints := []struct{ method, path string }{
		{"POST", "/v1/documents/process"}, {"POST", "/v1/extraction-sessions"}, {"POST", "/v1/webhook-endpoints"},
		{"PUT", "/v1/batches/j/webhook"}, {"POST", "/v1/api-keys"},
	}
	deep := strings.Repeat(`{"a":`, 50000) + "1" + strings.Repeat("}", 50000)
	deepArr := `{"documentIds":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}"
	huge := `{"documentIds":["` + strings.Repeat("d", 2<<20) + `"]}`
	bodies := []struct {
		name, body, ct string
		status         []int
	}{
		{"deep object", deep, "application/json", []int{400, 413}},
		{"deep array", deepArr, "application/json", []int{400, 413}},
		{"huge", huge, "application/json", []int{413}},
		{"truncated", `{"documentIds":["doc_`, "application/json", []int{400}},
		{"invalid utf-8", "{\"url\":\"\xff\xfe\",\"label\":\"\xc0\x80\"}", "application/json", []int{400}},
		{"not an object", `[1,2,3]`, "application/json", []int{400}},
		{"null", `null`, "application/json", []int{400}},
		{"trailing", `{} {}`, "application/json", []int{400}},
		{"unknown key", `{"zzz":1}`, "application/json", []int{400}},
		{"form", `documentIds=a`, "application/x-www-form-urlencoded", []int{415}},
		{"no type", `{}`, "", []int{400, 415}},
		{"bom", "\ufeff{}", "application/json", []int{400}},
		{"nul", "{\"label\":\"a\x00\"}", "application/json", []int{400}},
	}
	for _, e := range endpoints {
		for _, b := range bodies {
			r := tn.call(e.method, e.path, auth, strings.NewReader(b.body), b.ct, nil)
			ok := false
			for _, s := range b.status {
				ok = ok || r.code == s
			}
			if !ok {
				t.Fatalf("%s %s with %s: %d %s", e.method, e.path, b.name, r.code, r.body)
			}
			var code string
			switch r.code {
			case 400:
				code = "invalid_request"
			case 413:
				code = "payload_too_large"
			case 415:
				code = "unsupported_media_type"
			}
			r.envelope(t, r.code, code)
		}
	}
	if end := tn.logEnd(); end != before {
		t.Fatalf("hostile JSON moved the log from %d to %d", before, end)
	}
	tn.verify()
}

// rawConn opens a TCP connection to the node for hand-written HTTP.
func (tn *testNode) rawConn() net.Conn {
	tn.t.Helper()
	c, err := net.Dial("tcp", tn.n.httpAddr)
	if err != nil {
		tn.t.Fatal(err)
	}
	tn.t.Cleanup(func() { c.Close() })
	return c
}

// TestSlowClients: a client that stalls in its headers is disconnected; one
// that stalls in its body gets 408 with the envelope and the connection is
// closed; neither leaves anything behind, and the node keeps serving.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) {
		c.HeaderTimeout, c.BodyIdleTimeout, c.BodyTimeout = 500*time.Millisecond, 500*time.Millisecond, 3*time.Second
	})
	before := tn.logEnd()

	// Slow headers: the server hangs up without reading a request.
	c := tn.rawConn()
	_, _ = io.WriteString(c, "GET /v1/batches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tn.key+"\r\n")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || n != 0 {
		t.Fatalf("slow headers: read %d bytes, %v; want the connection closed", n, err)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("slow headers: the server kept the connection open")
	}

	body, ct := multipartBody(t, "slow.txt", textInvoice(1), "")
	raw := body.Bytes()
	for _, c := range []struct {
		name string
		feed func(net.Conn)
	}{
		// Half the body, then silence.
		{"stalled body", func(conn net.Conn) { _, _ = conn.Write(raw[:len(raw)/2]) }},
		// A byte every 400 ms: each read makes progress, the whole never
		// arrives within the body timeout.
		{"trickled body", func(conn net.Conn) {
			for i := 0; i < 20; i++ {
				if _, err := conn.Write(raw[i : i+1]); err != nil {
					return
				}
				time.Sleep(400 * time.Millisecond) // the client under test is slow on purpose
			}
		}},
	} {
		conn := tn.rawConn()
		_, _ = io.WriteString(conn, "POST /v1/batches/slow/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tn.key+
			"\r\nContent-Type: "+ct+"\r\nContent-Length: "+strconv.Itoa(len(raw))+"\r\n\r\n")
		go c.feed(conn)
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r := reply{what: c.name, code: resp.StatusCode, hdr: resp.Header, body: b}
		r.envelope(t, http.StatusRequestTimeout, "request_timeout")
		if !resp.Close {
			t.Fatalf("%s: the connection stays open after 408", c.name)
		}
	}
	tn.call("GET", "/v1/batches/slow", "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
	if end := tn.logEnd(); end != before {
		t.Fatalf("slow clients moved the log from %d to %d", before, end)
	}
	// Still serving.
	if _, code := tn.upload("fast", "a.txt", textInvoice(2), ""); code != http.StatusCreated {
		t.Fatalf("upload after slow clients: %d", code)
	}
}

// TestIPFlood: past the per-address limit every /v1 call from that address
// answers 429 with Retry-After and the envelope, before any key is looked
// at (a flood of guessed keys is cut off too); health checks are not
// limited.
func TestIPFlood(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.IPRate = 30 })
	limited := 0
	for i := 0; i < 60; i++ {
		auth := "Bearer dk_guess" + strconv.Itoa(i)
		if i%2 == 0 {
			auth = "Bearer " + tn.key
		}
		r := tn.call("GET", "/v1/batches", auth, nil, "", nil)
		switch r.code {
		case http.StatusOK, http.StatusUnauthorized:
			if limited > 0 {
				t.Fatalf("call %d admitted after the limit was reached", i)
			}
		case http.StatusTooManyRequests:
			limited++
			r.envelope(t, http.StatusTooManyRequests, "rate_limited")
			if s, err := strconv.Atoi(r.hdr.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("Retry-After %q", r.hdr.Get("Retry-After"))
			}
		default:
			t.Fatalf("call %d: %d %s", i, r.code, r.body)
		}
	}
	if limited < 25 {
		t.Fatalf("only %d of 60 calls limited at 30 per minute", limited)
	}
	for _, p := range []string{"/healthz", "/readyz", "/openapi.json"} {
		if r := tn.call("GET", p, "", nil, "", nil); r.code != http.StatusOK {
			t.Fatalf("%s under a flood: %d", p, r.code)
		}
	}
}

// TestUnicodeEdgeCases: references and file names at the edges of Unicode
// round-trip byte for byte (no normalisation, so NFC and NFD spellings stay
// distinct); what cannot be stored faithfully is refused with a 4xx and
// records nothing.
func TestUnicodeEdgeCases(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	auth := "Bearer " + tn.key
	for _, ref := range []string{
		"caf\u00e9", "cafe\u0301", "😀👍🏽👨‍👩‍👧", "\u202eevil\u202c", "\u200b\u200d\ufeff", "日本語の請求書",
		strings.Repeat("😀", 256), "\U0010fffd", "a\u00a0b", "x" + strings.Repeat("\u0301", 200),
	} {
		d, code := tn.upload("uni", "f.txt", textInvoice(1), ref)
		if code != http.StatusCreated || d.Reference == nil || *d.Reference != ref {
			t.Fatalf("reference %q: %d %+v", ref, code, d.Reference)
		}
		var again docView
		if tn.get("/v1/documents/"+d.ID, &again) != http.StatusOK || again.Reference == nil || *again.Reference != ref {
			t.Fatalf("reference %q read back as %v", ref, again.Reference)
		}
	}
	before := tn.logEnd()
	for _, ref := range []string{strings.Repeat("😀", 257), "a\u0085b", "a\u009fb", "\xed\xa0\x80", "a\x00"} {
		body, ct := multipartBody(t, "f.txt", textInvoice(1), ref)
		tn.call("POST", "/v1/batches/uni/documents", auth, body, ct, nil).envelope(t, http.StatusBadRequest, "invalid_request")
	}
	for _, key := range []string{"clé", "a\u200bb"} {
		body, ct := multipartBody(t, "f.txt", textInvoice(1), "")
		tn.call("POST", "/v1/batches/uni/documents", auth, body, ct, map[string]string{"Idempotency-Key": key}).envelope(t, http.StatusBadRequest, "invalid_request")
	}
	for _, name := range []string{"caf%C3%A9", "%F0%9F%98%80", "a%E2%80%AEb", "%C3%A9t%C3%A9"} {
		tn.call("GET", "/v1/batches/"+name, auth, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
	}
	if end := tn.logEnd(); end != before {
		t.Fatalf("refused unicode moved the log from %d to %d", before, end)
	}
	// File names keep their Unicode, lose control characters and paths.
	for sent, stored := range map[string]string{"r\u00e9sum\u00e9.pdf": "r\u00e9sum\u00e9.pdf", "😀/../../x.txt": "x.txt", "a\u202eb.txt": "a\u202eb.txt"} {
		body, ct := rawMultipart(t, part{"file", sent, "content"})
		var d docView
		tn.call("POST", "/v1/batches/uni/documents", auth, body, ct, nil).decode(t, http.StatusCreated, &d)
		if d.FileName != stored {
			t.Fatalf("file name %q stored as %q", sent, d.FileName)
		}
	}
	tn.verify()
}
