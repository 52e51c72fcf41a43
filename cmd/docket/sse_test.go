package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The live streams (api/sse.go), over a real HTTP client on loopback. Every
// read is bounded by a context deadline; nothing sleeps.

// sseEvent is one Server-Sent Event as a client parses it.
type sseEvent struct {
	Event, ID, Data string
}

// offset is the log offset of an id "<partition>-<offset>".
func (e sseEvent) offset(t *testing.T) (int32, int64) {
	t.Helper()
	p, o, ok := strings.Cut(e.ID, "-")
	pn, err1 := strconv.ParseInt(p, 10, 32)
	on, err2 := strconv.ParseInt(o, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("event id %q is not <partition>-<offset>", e.ID)
	}
	return int32(pn), on
}

// sseClient is one open stream; its events arrive on a channel filled by a
// reader goroutine that a small bufio parser drives.
type sseClient struct {
	t      *testing.T
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// openStream GETs path as an event stream. With want 200 it returns the
// open stream; otherwise it decodes the error envelope into env and returns
// nil.
func (tn *testNode) openStream(path, lastEventID string, want int, env *errorView) *sseClient {
	tn.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", tn.url(path), nil)
	if err != nil {
		tn.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tn.key)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	// The response headers are bounded too: a stream answers at once.
	timer := time.AfterFunc(30*time.Second, cancel)
	resp, err := http.DefaultClient.Do(req)
	timer.Stop()
	if err != nil {
		cancel()
		tn.t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK || want != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusNotFound && strings.Contains(string(raw), `"message":"api: not found"`) {
			// The router's own 404, not the handler's: the stream routes
			// are not registered in api/server.go (yet).
			tn.t.Skipf("GET %s is not routed: add the /events routes to api/server.go", path)
		}
		if env != nil {
			_ = json.Unmarshal(raw, env)
		}
		if resp.StatusCode != want {
			tn.t.Fatalf("GET %s: %d %s, want %d", path, resp.StatusCode, raw, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			tn.t.Errorf("GET %s: %d with Content-Type %q", path, resp.StatusCode, ct)
		}
		return nil
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != v {
			tn.t.Errorf("%s: %s = %q, want %q", path, k, got, v)
		}
	}
	c := &sseClient{t: tn.t, resp: resp, events: make(chan sseEvent, 64), cancel: cancel}
	go c.read()
	tn.t.Cleanup(c.close)
	return c
}

// read parses the stream: fields up to a blank line make an event; comment
// lines (": keep-alive") are skipped. The channel closes at the end.
func (c *sseClient) read() {
	defer close(c.events)
	sc := bufio.NewScanner(c.resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				ev.Data = strings.Join(data, "\n")
				c.events <- ev
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				ev.Event = value
			case "id":
				ev.ID = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

func (c *sseClient) close() {
	c.cancel()
	c.resp.Body.Close()
}

// next returns the next event, failing the test after d.
func (c *sseClient) next(d time.Duration) sseEvent {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	select {
	case ev, ok := <-c.events:
		if !ok {
			c.t.Fatal("stream ended")
		}
		return ev
	case <-ctx.Done():
		c.t.Fatalf("no event within %v", d)
	}
	return sseEvent{}
}

// until reads events until done holds for one, checking each on the way
// (same event name, ids never decreasing, the state never repeated).
func (c *sseClient) until(name string, last sseEvent, each func(sseEvent), done func(sseEvent) bool) (seen []sseEvent) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	_, prev := last.offset(c.t)
	for {
		ev := c.next(time.Until(deadline))
		if ev.Event != name {
			c.t.Fatalf("event %q (%s), want %q", ev.Event, ev.Data, name)
		}
		if _, o := ev.offset(c.t); o <= prev {
			c.t.Fatalf("event id %s after %s: ids must increase", ev.ID, last.ID)
		}
		if ev.Data == last.Data {
			c.t.Fatalf("state sent twice in a row: %s", ev.Data)
		}
		_, prev = ev.offset(c.t)
		last = ev
		seen = append(seen, ev)
		each(ev)
		if done(ev) {
			return seen
		}
	}
}

// rawGet returns a GET's body without its final newline.
func (tn *testNode) rawGet(path string) string {
	tn.t.Helper()
	req, _ := http.NewRequest("GET", tn.url(path), nil)
	req.Header.Set("Authorization", "Bearer "+tn.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tn.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tn.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	return strings.TrimSuffix(string(raw), "\n")
}

func decode[T any](t *testing.T, ev sseEvent) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(ev.Data), &v); err != nil {
		t.Fatalf("event data %q: %v", ev.Data, err)
	}
	return v
}

// TestSSEBatch: a batch stream opens with the current state, follows the
// batch through queued and processing to all_done, stays open past the
// terminal state, and a reconnect with Last-Event-ID gets the current state
// at once.
func TestSSEBatch(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	tn := setup(t, func(c *Config) { c.holdWorker = hold })

	var env errorView
	tn.openStream("/v1/batches/nosuch/events", "", http.StatusNotFound, &env)
	if env.Error.Code != "not_found" || env.Error.RequestID == "" {
		t.Fatalf("unknown batch: %+v", env)
	}
	env = errorView{}
	tn.openStream("/v1/batches/bad%20name/events", "", http.StatusNotFound, &env)
	if env.Error.Code != "not_found" {
		t.Fatalf("invalid batch name: %+v", env)
	}

	for i := range 3 {
		if _, code := tn.upload("live", "a"+strconv.Itoa(i)+".txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	s := tn.openStream("/v1/batches/live/events", "", http.StatusOK, nil)
	first := s.next(30 * time.Second)
	if first.Event != "batch" || first.Data != tn.rawGet("/v1/batches/live") {
		t.Fatalf("first event %+v, GET says %s", first, tn.rawGet("/v1/batches/live"))
	}
	if p, _ := first.offset(t); p != tn.n.store.PartitionFor("org_default") {
		t.Fatalf("id %s names another partition than the org's %d", first.ID, tn.n.store.PartitionFor("org_default"))
	}
	if b := decode[batchView](t, first); b.Status != "queued" || b.Total != 3 || b.AllDone {
		t.Fatalf("first state %+v", b)
	}

	if code := tn.do("POST", "/v1/batches/live/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	close(hold)
	statuses := map[string]bool{}
	seen := s.until("batch", first, func(ev sseEvent) {
		b := decode[batchView](t, ev)
		statuses[b.Status] = true
		if b.Status != "queued" && b.Status != "processing" && b.Status != "succeeded" {
			t.Fatalf("unexpected state %+v", b)
		}
	}, func(ev sseEvent) bool { return decode[batchView](t, ev).AllDone })
	last := seen[len(seen)-1]
	if b := decode[batchView](t, last); b.Status != "succeeded" || b.Counts["succeeded"] != 3 || b.CompletedAt == nil {
		t.Fatalf("final state %+v", b)
	}
	if !statuses["processing"] {
		t.Logf("note: no processing state observed between fetches (%d events)", len(seen))
	}
	if got := tn.rawGet("/v1/batches/live"); got != last.Data {
		t.Fatalf("last event %s, GET says %s", last.Data, got)
	}

	// Terminal is not the end: a new document reopens the batch.
	if _, code := tn.upload("live", "late.txt", textInvoice(9), ""); code != http.StatusCreated {
		t.Fatalf("late upload: %d", code)
	}
	s.until("batch", last, func(sseEvent) {}, func(ev sseEvent) bool {
		b := decode[batchView](t, ev)
		return b.Total == 4 && !b.AllDone && b.CompletedAt == nil
	})
	s.close()

	// Resume: the current state first, at once, with an id not behind.
	r := tn.openStream("/v1/batches/live/events", last.ID, http.StatusOK, nil)
	again := r.next(10 * time.Second)
	if b := decode[batchView](t, again); again.Event != "batch" || b.Total != 4 || b.AllDone {
		t.Fatalf("resumed with %+v", again)
	}
	_, lo := last.offset(t)
	if _, o := again.offset(t); o <= lo {
		t.Fatalf("resumed id %s not after %s", again.ID, last.ID)
	}
	// A malformed Last-Event-ID is ignored the same way.
	m := tn.openStream("/v1/batches/live/events", "not-an-id", http.StatusOK, nil)
	if ev := m.next(10 * time.Second); ev.Data != again.Data {
		t.Fatalf("malformed Last-Event-ID: %+v", ev)
	}

	// Deleting the batch ends its streams with the 404 a GET now gives.
	if code := tn.do("DELETE", "/v1/batches/live", nil, "", nil, nil); code/100 != 2 {
		t.Fatalf("delete: %d", code)
	}
	for _, c := range []*sseClient{r, m} {
		ev := c.next(30 * time.Second)
		if e := decode[errorView](t, ev); ev.Event != "error" || e.Error.Code != "not_found" {
			t.Fatalf("after delete: %+v", ev)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		select {
		case ev, ok := <-c.events:
			if ok {
				t.Fatalf("event after the error: %+v", ev)
			}
		case <-ctx.Done():
			t.Fatal("stream still open after the error event")
		}
		cancel()
	}
}

// TestSSEJob: a preprocess job stream goes from queued to completed, ids
// increasing; a bad handle is the one 404 of the jobs surface; a resume
// gets the final state at once.
func TestSSEJob(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	tn := setup(t, func(c *Config) { c.holdWorker = hold })

	var env errorView
	tn.openStream("/v1/jobs/job_garbage/events", "", http.StatusNotFound, &env)
	if env.Error.Code != "not_found" || !strings.Contains(env.Error.Message, "unknown job or session") {
		t.Fatalf("bad handle: %+v", env)
	}

	a, b := tn.uploadJobsDoc("a.txt", textInvoice(1)), tn.uploadJobsDoc("b.txt", textInvoice(2))
	var created struct {
		JobID string `json:"jobId"`
	}
	if code := tn.postJSON("/v1/documents/process", map[string]any{"documentIds": []string{a, b}}, &created); code != http.StatusAccepted || created.JobID == "" {
		t.Fatalf("process: %d %+v", code, created)
	}
	// A tampered handle is the same 404 as garbage.
	env = errorView{}
	flip := "A"
	if strings.HasSuffix(created.JobID, "A") {
		flip = "B"
	}
	tampered := created.JobID[:len(created.JobID)-1] + flip
	tn.openStream("/v1/jobs/"+tampered+"/events", "", http.StatusNotFound, &env)
	if env.Error.Code != "not_found" {
		t.Fatalf("tampered handle: %+v", env)
	}

	path := "/v1/jobs/" + created.JobID
	s := tn.openStream(path+"/events", "", http.StatusOK, nil)
	first := s.next(30 * time.Second)
	if first.Event != "job" {
		t.Fatalf("first event %+v", first)
	}
	if j := decode[jobView](t, first); j.Status != "queued" || j.JobID != created.JobID || j.Type != "preprocess" {
		t.Fatalf("first state %+v", j)
	}
	close(hold)
	seen := s.until("job", first, func(ev sseEvent) {
		switch st := decode[jobView](t, ev).Status; st {
		case "queued", "in_progress", "completed":
		default:
			t.Fatalf("unexpected job status %q", st)
		}
	}, func(ev sseEvent) bool { return decode[jobView](t, ev).Status == "completed" })
	last := seen[len(seen)-1]
	if j := decode[jobView](t, last); j.Progress == nil || j.Progress.Done != 2 || j.Duration == nil {
		t.Fatalf("final state %+v", j)
	}
	if got := tn.rawGet(path); got != last.Data {
		t.Fatalf("last event %s, GET says %s", last.Data, got)
	}
	s.close()

	r := tn.openStream(path+"/events", last.ID, http.StatusOK, nil)
	if ev := r.next(10 * time.Second); ev.Event != "job" || decode[jobView](t, ev).Status != "completed" {
		t.Fatalf("resumed with %+v", ev)
	}
}
