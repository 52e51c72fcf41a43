package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/eventstore"
)

// TestBrokerOutage takes the node's Kafka broker away while the node runs:
// reads keep answering from the views, writes answer 503 with Retry-After
// and the envelope, and once the broker is back (same address, same log)
// writes succeed again without restarting the node, and nothing accepted
// before, during or after the outage is lost.
func TestBrokerOutage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broker, err := eventstore.StartEmbedded(dir, "127.0.0.1:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	addr := broker.Addr()
	defer func() { broker.Close() }()
	tn := setup(t, func(c *Config) { c.KafkaBrokers, c.AppendTimeout = addr, 5*time.Second })
	auth := "Bearer " + tn.key

	accepted := map[string]bool{}
	d, code := tn.upload("o", "before.txt", textInvoice(1), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	accepted[d.ID] = true
	if code := tn.do("POST", "/v1/batches/o/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	tn.waitBatch("o", func(b batchView) bool { return b.AllDone })

	broker.Close()
	start := time.Now()
	reads := []string{"/v1/batches", "/v1/batches/o", "/v1/batches/o/results", "/v1/documents/" + d.ID, "/v1/api-keys"}
	for _, p := range reads {
		if r := tn.call("GET", p, auth, nil, "", nil); r.code != http.StatusOK {
			t.Fatalf("GET %s during the outage: %d %s", p, r.code, r.body)
		}
	}
	// A write that reached the producer before the node noticed waits out
	// the append timeout and answers 503 with its outcome unknown (the
	// producer keeps it); every write after that is refused at once.
	writes, unknown := 0, map[string]bool{}
	for i, w := range []func() reply{
		func() reply {
			body, ct := multipartBody(t, "during.txt", textInvoice(2), "")
			return tn.call("POST", "/v1/batches/o/documents", auth, body, ct, nil)
		},
		func() reply { return tn.call("POST", "/v1/batches/o/process", auth, nil, "", nil) },
		func() reply { return tn.call("DELETE", "/v1/batches/o", auth, nil, "", nil) },
		func() reply {
			return tn.call("PUT", "/v1/batches/o/webhook", auth, strings.NewReader(`{"url":"https://example.com/h"}`), "application/json", nil)
		},
		func() reply { return tn.call("POST", "/v1/api-keys", auth, nil, "", nil) },
	} {
		t0 := time.Now()
		r := w()
		e := r.envelope(t, http.StatusServiceUnavailable, "unavailable")
		t.Logf("%s: 503 after %s: %s", r.what, time.Since(t0).Round(time.Millisecond), e.Error.Message)
		if s, err := strconv.Atoi(r.hdr.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("%s: Retry-After %q", r.what, r.hdr.Get("Retry-After"))
		}
		if strings.Contains(e.Error.Message, "may still be recorded") {
			if i > 0 {
				t.Fatalf("%s waited on the producer after the outage was known", r.what)
			}
			unknown[r.what] = true
		} else if !strings.Contains(e.Error.Message, "no Kafka broker answers") {
			t.Fatalf("%s: %s", r.what, e.Error.Message)
		}
		writes++
	}
	t.Logf("outage: reads answered, %d writes refused with 503 in %s", writes, time.Since(start).Round(time.Millisecond))
	for _, p := range reads {
		if r := tn.call("GET", p, auth, nil, "", nil); r.code != http.StatusOK {
			t.Fatalf("GET %s late in the outage: %d %s", p, r.code, r.body)
		}
	}

	// The broker comes back on the same address with the same log; the
	// node reconnects by itself. A client retries after Retry-After.
	broker, err = eventstore.StartEmbedded(dir, addr, 4)
	if err != nil {
		t.Fatal(err)
	}
	var after docView
	for attempt := 0; ; attempt++ {
		body, ct := multipartBody(t, "after.txt", textInvoice(3), "")
		r := tn.call("POST", "/v1/batches/o/documents", auth, body, ct, map[string]string{"Idempotency-Key": "after-outage"})
		if r.code == http.StatusCreated {
			r.decode(t, http.StatusCreated, &after)
			break
		}
		e := r.envelope(t, http.StatusServiceUnavailable, "unavailable")
		t.Logf("after the outage, attempt %d: %s", attempt, e.Error.Message)
		if attempt == 30 {
			t.Fatal("writes never recovered")
		}
		s, _ := strconv.Atoi(r.hdr.Get("Retry-After"))
		time.Sleep(time.Duration(s) * time.Second) // the client honours Retry-After
	}
	accepted[after.ID] = true
	if code := tn.do("POST", "/v1/batches/o/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process after the outage: %d", code)
	}
	tn.waitBatch("o", func(b batchView) bool { return b.AllDone })
	res := tn.results("o")
	for _, doc := range res.Documents {
		if doc.Status != "succeeded" {
			t.Errorf("%s %s: %s", doc.ID, doc.FileName, doc.Status)
		}
		delete(accepted, doc.ID)
	}
	if len(accepted) != 0 {
		t.Fatalf("accepted documents lost: %v", accepted)
	}
	// At most the one upload whose outcome was unknown was recorded too,
	// once: documents before, after, and maybe during.
	if n := len(res.Documents); n < 2 || n > 2+len(unknown) {
		t.Fatalf("%d documents after the outage (%d writes of unknown outcome)", n, len(unknown))
	}
	t.Logf("after the outage: %d documents, all succeeded (%d write of unknown outcome)", len(res.Documents), len(unknown))
	tn.verify()
}
