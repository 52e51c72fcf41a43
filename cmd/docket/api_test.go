package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// reply is one raw HTTP answer.
type reply struct {
	what string // "METHOD path", for messages
	code int
	hdr  http.Header
	body []byte
}

// send makes one request; auth is the whole Authorization header ("" sends
// none). It never calls t.Fatal, so goroutines may use it.
func send(base, method, path, auth string, body io.Reader, ct string, hdr map[string]string) (reply, error) {
	r := reply{what: method + " " + path}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		return r, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	r.code, r.hdr = resp.StatusCode, resp.Header
	r.body, err = io.ReadAll(resp.Body)
	return r, err
}

func (tn *testNode) call(method, path, auth string, body io.Reader, ct string, hdr map[string]string) reply {
	tn.t.Helper()
	r, err := send("http://"+tn.n.httpAddr, method, path, auth, body, ct, hdr)
	if err != nil {
		tn.t.Fatalf("%s: %v", r.what, err)
	}
	return r
}

// envelope requires r to be the error envelope with status and code, its
// request_id matching the X-Request-Id header.
func (r reply) envelope(t *testing.T, status int, code string) errorView {
	t.Helper()
	var e errorView
	if r.code != status {
		t.Fatalf("%s: status %d, want %d; body %s", r.what, r.code, status, r.body)
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("%s: not an envelope: %q: %v", r.what, r.body, err)
	}
	if e.Error.Code != code || e.Error.Message == "" || e.Error.RequestID == "" || e.Error.RequestID != r.hdr.Get("X-Request-Id") {
		t.Fatalf("%s: envelope %+v (X-Request-Id %q), want code %s", r.what, e.Error, r.hdr.Get("X-Request-Id"), code)
	}
	if ct := r.hdr.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q", r.what, ct)
	}
	return e
}

func (r reply) decode(t *testing.T, status int, out any) {
	t.Helper()
	if r.code != status {
		t.Fatalf("%s: status %d, want %d; body %s", r.what, r.code, status, r.body)
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		t.Fatalf("%s: decode %q: %v", r.what, r.body, err)
	}
}

// createOrg runs `docket orgs create NAME` against the node's brokers and
// waits until the node's views accept the printed key.
func (tn *testNode) createOrg(name string) (key string) {
	tn.t.Helper()
	var out, errw bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"create", name, "--kafka-brokers", strings.Join(tn.n.store.Seeds(), ","), "--topic-prefix", tn.cfg.TopicPrefix}
	if err := orgs(ctx, args, &out, &errw); err != nil {
		tn.t.Fatalf("orgs create %s: %v (%s)", name, err, errw.String())
	}
	_, key, ok := strings.Cut(out.String(), "api key: ")
	key = strings.TrimSpace(key)
	if !ok || !strings.HasPrefix(key, "dk_") {
		tn.t.Fatalf("orgs create printed %q", out.String())
	}
	p := tn.n.store.PartitionFor(domain.OrgID(name))
	for i := 0; ; i++ {
		if r := tn.call("GET", "/v1/batches", "Bearer "+key, nil, "", nil); r.code == http.StatusOK {
			return key
		} else if i == 120 {
			tn.t.Fatalf("org %s never became known: %d %s", name, r.code, r.body)
		}
		wctx, wcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_ = tn.n.views.WaitFor(wctx, nextPosition(tn.n.views.Offsets(), p))
		wcancel()
	}
}

func TestAPIAuth(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	for _, auth := range []string{"", "Bearer ", "Bearer    ", "Basic " + tn.key, "bearer-" + tn.key, tn.key,
		"Bearer dk_unknownkeyunknownkeyunknownkey", "Bearer " + tn.key + "x", "Bearer " + strings.Repeat("k", 300)} {
		for _, path := range []string{"/v1/batches", "/v1/batches/x", "/v1/documents/doc_x"} {
			r := tn.call("GET", path, auth, nil, "", nil)
			r.envelope(t, http.StatusUnauthorized, "unauthorized")
			if !strings.HasPrefix(r.hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("auth %.20q %s: WWW-Authenticate %q", auth, path, r.hdr.Get("WWW-Authenticate"))
			}
		}
	}
	// Writes are refused just the same, and create nothing.
	body, ct := multipartBody(t, "a.txt", textInvoice(1), "")
	tn.call("POST", "/v1/batches/auth/documents", "Bearer nope", body, ct, nil).envelope(t, http.StatusUnauthorized, "unauthorized")
	tn.call("GET", "/v1/batches/auth", "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")

	// The right key works; a sane client request id is reused, on success
	// and in an error envelope alike; an insane one is replaced.
	r := tn.call("GET", "/v1/batches", "Bearer "+tn.key, nil, "", map[string]string{"X-Request-Id": "client-req.42_A"})
	if r.code != http.StatusOK || r.hdr.Get("X-Request-Id") != "client-req.42_A" {
		t.Fatalf("good key: %d, X-Request-Id %q", r.code, r.hdr.Get("X-Request-Id"))
	}
	e := tn.call("GET", "/v1/batches", "", nil, "", map[string]string{"X-Request-Id": "client-req.43"}).envelope(t, http.StatusUnauthorized, "unauthorized")
	if e.Error.RequestID != "client-req.43" {
		t.Fatalf("envelope request_id %q", e.Error.RequestID)
	}
	for _, bad := range []string{"has space", strings.Repeat("r", 129), "tab\there", "ümlaut"} {
		r := tn.call("GET", "/v1/batches", "Bearer "+tn.key, nil, "", map[string]string{"X-Request-Id": bad})
		if got := r.hdr.Get("X-Request-Id"); r.code != http.StatusOK || got == "" || got == bad {
			t.Fatalf("request id %q: %d, echoed %q", bad, r.code, got)
		}
	}
	ids := map[string]bool{}
	for range 3 {
		ids[tn.call("GET", "/healthz", "", nil, "", nil).hdr.Get("X-Request-Id")] = true
	}
	if len(ids) != 3 || ids[""] {
		t.Fatalf("generated request ids not unique: %v", ids)
	}
}

func TestAPIOrgIsolation(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	d, code := tn.upload("mine", "inv.txt", textInvoice(1), "secret-ref")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	other := "Bearer " + tn.createOrg("other")

	// Another org's batch and document look exactly like unknown ones.
	same := func(method, known, unknown string) {
		t.Helper()
		a := tn.call(method, known, other, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
		b := tn.call(method, unknown, other, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
		if a.Error.Message != b.Error.Message {
			t.Fatalf("%s %s: message %q differs from unknown's %q", method, known, a.Error.Message, b.Error.Message)
		}
	}
	same("GET", "/v1/batches/mine", "/v1/batches/nosuch")
	same("GET", "/v1/batches/mine/results", "/v1/batches/nosuch/results")
	same("POST", "/v1/batches/mine/process", "/v1/batches/nosuch/process")
	same("DELETE", "/v1/batches/mine", "/v1/batches/nosuch")
	same("GET", "/v1/documents/"+d.ID, "/v1/documents/doc_nosuchdocument")

	var list struct {
		Batches    []batchView `json:"batches"`
		NextCursor *string     `json:"next_cursor"`
	}
	tn.call("GET", "/v1/batches", other, nil, "", nil).decode(t, http.StatusOK, &list)
	if len(list.Batches) != 0 || list.NextCursor != nil {
		t.Fatalf("other org lists %+v", list)
	}
	// The other org may use the same batch name: its own batch.
	body, ct := multipartBody(t, "theirs.txt", textInvoice(2), "")
	var theirs docView
	tn.call("POST", "/v1/batches/mine/documents", other, body, ct, nil).decode(t, http.StatusCreated, &theirs)
	tn.call("GET", "/v1/batches", other, nil, "", nil).decode(t, http.StatusOK, &list)
	if len(list.Batches) != 1 || list.Batches[0].Name != "mine" || list.Batches[0].Total != 1 {
		t.Fatalf("other org lists %+v", list)
	}
	tn.call("GET", "/v1/documents/"+theirs.ID, "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")

	// The default org's batch is untouched by the other org's attempts.
	b := tn.waitBatch("mine", func(batchView) bool { return true })
	if b.Total != 1 || b.Status != "queued" {
		t.Fatalf("default org's batch = %+v", b)
	}
	if r := tn.results("mine"); len(r.Documents) != 1 || r.Documents[0].ID != d.ID {
		t.Fatalf("default org's results = %+v", r)
	}

	// An org is created once.
	var out, errw bytes.Buffer
	args := []string{"create", "other", "--kafka-brokers", strings.Join(tn.n.store.Seeds(), ","), "--topic-prefix", tn.cfg.TopicPrefix}
	if err := orgs(context.Background(), args, &out, &errw); !errors.Is(err, domain.ErrOrgExists) || strings.Contains(out.String(), "api key") {
		t.Fatalf("second create: %v, printed %q", err, out.String())
	}
	tn.verify()
}

func TestAPIRateLimit(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.StatusRate = 5 })
	d, code := tn.upload("rl", "inv.txt", textInvoice(1), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	auth := "Bearer " + tn.key
	last := 5
	for i := range 5 {
		r := tn.call("GET", "/v1/batches/rl", auth, nil, "", nil)
		rem, err := strconv.Atoi(r.hdr.Get("RateLimit-Remaining"))
		if r.code != http.StatusOK || r.hdr.Get("RateLimit-Limit") != "5" || err != nil || rem >= last || rem < 0 {
			t.Fatalf("GET %d: %d, limit %q remaining %q (previous %d)", i, r.code, r.hdr.Get("RateLimit-Limit"), r.hdr.Get("RateLimit-Remaining"), last)
		}
		last = rem
	}
	limited := func(path, auth string) {
		t.Helper()
		r := tn.call("GET", path, auth, nil, "", nil)
		r.envelope(t, http.StatusTooManyRequests, "rate_limited")
		if ra, err := strconv.Atoi(r.hdr.Get("Retry-After")); err != nil || ra < 1 || r.hdr.Get("RateLimit-Remaining") != "0" {
			t.Fatalf("%s: Retry-After %q, RateLimit-Remaining %q", path, r.hdr.Get("Retry-After"), r.hdr.Get("RateLimit-Remaining"))
		}
	}
	limited("/v1/batches/rl", auth)
	limited("/v1/documents/"+d.ID, auth) // one budget for both status endpoints
	limited("/v1/batches/nosuch", auth)  // counted before the lookup
	for _, path := range []string{"/v1/batches/rl/results", "/v1/batches"} {
		// Only the general per-org limit applies here, not the status one.
		if r := tn.call("GET", path, auth, nil, "", nil); r.code != http.StatusOK || r.hdr.Get("RateLimit-Limit") != strconv.Itoa(tn.cfg.Rate) {
			t.Fatalf("%s is limited: %d %v", path, r.code, r.hdr)
		}
	}
	// Writes are not status requests.
	if _, code := tn.upload("rl", "inv2.txt", textInvoice(2), ""); code != http.StatusCreated {
		t.Fatalf("upload while limited: %d", code)
	}
	// Another org has a budget of its own.
	other := "Bearer " + tn.createOrg("second")
	r := tn.call("GET", "/v1/batches/rl", other, nil, "", nil)
	r.envelope(t, http.StatusNotFound, "not_found")
	if r.hdr.Get("RateLimit-Remaining") != "4" {
		t.Fatalf("other org's first status request: remaining %q", r.hdr.Get("RateLimit-Remaining"))
	}
}

func TestAPIIdempotency(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	auth := "Bearer " + tn.key
	post := func(path, key string, content []byte, name, ref string) reply {
		t.Helper()
		var body io.Reader
		ct := ""
		if content != nil {
			body, ct = multipartBody(t, name, content, ref)
		}
		return tn.call("POST", path, auth, body, ct, map[string]string{"Idempotency-Key": key})
	}
	a := post("/v1/batches/idem/documents", "upload-1", textInvoice(1), "a.txt", "ref-1")
	b := post("/v1/batches/idem/documents", "upload-1", textInvoice(1), "a.txt", "ref-1")
	if a.code != http.StatusCreated || b.code != http.StatusCreated || !bytes.Equal(a.body, b.body) {
		t.Fatalf("replay: %d %s / %d %s", a.code, a.body, b.code, b.body)
	}
	if a.hdr.Get("Idempotent-Replayed") != "" || b.hdr.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("Idempotent-Replayed: first %q, second %q", a.hdr.Get("Idempotent-Replayed"), b.hdr.Get("Idempotent-Replayed"))
	}
	// Same key, different request: a different file, reference or batch.
	post("/v1/batches/idem/documents", "upload-1", textInvoice(2), "a.txt", "ref-1").envelope(t, http.StatusUnprocessableEntity, "idempotency_key_reused")
	post("/v1/batches/idem/documents", "upload-1", textInvoice(1), "a.txt", "ref-2").envelope(t, http.StatusUnprocessableEntity, "idempotency_key_reused")
	post("/v1/batches/idem2/documents", "upload-1", textInvoice(1), "a.txt", "ref-1").envelope(t, http.StatusUnprocessableEntity, "idempotency_key_reused")
	tn.call("GET", "/v1/batches/idem2", auth, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
	if r := tn.results("idem"); len(r.Documents) != 1 || r.Batch.Total != 1 {
		t.Fatalf("after replays the batch has %+v", r)
	}

	// Process with a key: the replay is the first answer, not a second run.
	p1 := post("/v1/batches/idem/process", "proc-1", nil, "", "")
	p2 := post("/v1/batches/idem/process", "proc-1", nil, "", "")
	if p1.code != http.StatusAccepted || p2.code != p1.code || !bytes.Equal(p1.body, p2.body) || p2.hdr.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("process replay: %d %s / %d %s", p1.code, p1.body, p2.code, p2.body)
	}
	var proc struct {
		Queued int `json:"queued"`
	}
	if err := json.Unmarshal(p1.body, &proc); err != nil || proc.Queued != 1 {
		t.Fatalf("process body %s", p1.body)
	}
	tn.call("POST", "/v1/batches/idem/process?retry_failed=true", auth, nil, "", map[string]string{"Idempotency-Key": "proc-1"}).
		envelope(t, http.StatusUnprocessableEntity, "idempotency_key_reused")

	// Concurrent requests with one key: one document, every answer the
	// same document or "in progress".
	const n = 8
	replies := make([]reply, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		body, ct := multipartBody(t, "c.txt", textInvoice(7), "")
		wg.Go(func() {
			replies[i], errs[i] = send("http://"+tn.n.httpAddr, "POST", "/v1/batches/conc/documents", auth, body, ct, map[string]string{"Idempotency-Key": "conc-1"})
		})
	}
	wg.Wait()
	docID := ""
	for i, r := range replies {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.code == http.StatusConflict {
			r.envelope(t, http.StatusConflict, "idempotency_key_in_progress")
			continue
		}
		var d docView
		r.decode(t, http.StatusCreated, &d)
		if docID != "" && d.ID != docID {
			t.Fatalf("two documents for one key: %s and %s", docID, d.ID)
		}
		docID = d.ID
	}
	if docID == "" {
		t.Fatal("no concurrent request succeeded")
	}
	if r := tn.results("conc"); len(r.Documents) != 1 || r.Documents[0].ID != docID {
		t.Fatalf("concurrent uploads left %+v", r.Documents)
	}
	// After the race, a retry is a replay of the winner.
	if r := post("/v1/batches/conc/documents", "conc-1", textInvoice(7), "c.txt", ""); r.code != http.StatusCreated || !strings.Contains(string(r.body), docID) {
		t.Fatalf("retry after the race: %d %s", r.code, r.body)
	}

	for _, key := range []string{"ключ", strings.Repeat("k", 300)} {
		post("/v1/batches/badkey/documents", key, textInvoice(3), "x.txt", "").envelope(t, http.StatusBadRequest, "invalid_request")
	}
	tn.call("GET", "/v1/batches/badkey", auth, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
	tn.verify()
}

func TestAPIHealth(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		var s struct {
			Status string `json:"status"`
		}
		tn.call("GET", path, "", nil, "", nil).decode(t, http.StatusOK, &s)
		if s.Status != want {
			t.Fatalf("%s: status %q", path, s.Status)
		}
	}
	if r := tn.call("GET", "/openapi.json", "", nil, "", nil); r.code != http.StatusOK || !json.Valid(r.body) {
		t.Fatalf("openapi.json: %d", r.code)
	}
}

// TestAPIGeneralRateLimit: every call counts against a general per-org
// limit, writes included, with the same 429 headers.
func TestAPIGeneralRateLimit(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.Rate = 3 })
	for i := range 3 {
		var b map[string]any
		if code := tn.get("/v1/batches", &b); code != http.StatusOK {
			t.Fatalf("call %d: %d", i, code)
		}
	}
	req, _ := http.NewRequest("POST", tn.url("/v1/batches/x/process"), nil)
	req.Header.Set("Authorization", "Bearer "+tn.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || resp.Header.Get("RateLimit-Limit") != "3" {
		t.Fatalf("4th call: %d %v", resp.StatusCode, resp.Header)
	}
}
