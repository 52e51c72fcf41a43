package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/webhook"
)

type received struct {
	id   string
	body []byte
	hdr  http.Header
	code int
}

// TestBatchWebhook: the receiver is down for the first attempts and then
// up; the notification arrives with the same webhook-id on every retry and a
// signature that verifies; a second completion after new documents sends a
// second notification with a new id; every attempt is listed.
func TestBatchWebhook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []received
	arrived := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		code := http.StatusOK
		if len(got) < 2 {
			code = http.StatusServiceUnavailable // down for the first two attempts
		}
		got = append(got, received{id: r.Header.Get("webhook-id"), body: body, hdr: r.Header.Clone(), code: code})
		mu.Unlock()
		w.WriteHeader(code)
		arrived <- struct{}{}
	}))
	defer srv.Close()
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback, c.WebhookSchedule = true, "0s,20ms,20ms,20ms,20ms" })

	secret, err := webhook.ParseSecret(tn.uploadHooked("hooked", srv.URL+"/hook"))
	if err != nil {
		t.Fatal(err)
	}
	waitDelivered := func(n int) []received {
		deadline := time.After(time.Minute)
		for {
			mu.Lock()
			ok := 0
			for _, r := range got {
				if r.code == http.StatusOK {
					ok++
				}
			}
			snapshot := append([]received(nil), got...)
			mu.Unlock()
			if ok >= n {
				return snapshot
			}
			select {
			case <-arrived:
			case <-deadline:
				t.Fatalf("%d notifications delivered, want %d (%d attempts)", ok, n, len(snapshot))
			}
		}
	}
	tn.do("POST", "/v1/batches/hooked/process", nil, "", nil, nil)
	first := waitDelivered(1)
	if len(first) != 3 {
		t.Fatalf("%d attempts, want 3 (two refused by the receiver, then delivered)", len(first))
	}
	for _, r := range first {
		if r.id != first[0].id || r.id == "" {
			t.Fatalf("webhook-id changed across retries: %q vs %q", r.id, first[0].id)
		}
		if err := webhook.Verify(secret, r.hdr, r.body, time.Now(), 5*time.Minute); err != nil {
			t.Fatalf("signature: %v", err)
		}
	}
	var payload struct {
		Type string `json:"type"`
		Data struct {
			BatchName string `json:"batch_name"`
			Status    string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(first[2].body, &payload); err != nil || payload.Type != "batch.completed" || payload.Data.BatchName != "hooked" || payload.Data.Status != "succeeded" {
		t.Fatalf("payload %s: %v", first[2].body, err)
	}

	// More documents, processed again: a second notification, new id.
	tn.upload("hooked", "b.txt", textInvoice(2), "")
	tn.do("POST", "/v1/batches/hooked/process", nil, "", nil, nil)
	all := waitDelivered(2)
	last := all[len(all)-1]
	if last.id == first[0].id {
		t.Fatalf("second completion reused webhook-id %s", last.id)
	}
	var list struct {
		Deliveries []struct {
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
		} `json:"deliveries"`
	}
	tn.waitFor(func() bool {
		tn.get("/v1/batches/hooked/webhook/deliveries", &list)
		return len(list.Deliveries) == 2 && list.Deliveries[0].State == "delivered" && list.Deliveries[1].State == "delivered"
	})
	attempts := list.Deliveries[0].Attempts + list.Deliveries[1].Attempts
	if attempts != 4 {
		t.Fatalf("deliveries = %+v, want 3 + 1 attempts", list.Deliveries)
	}
	// The batch shows its newest notification's delivery.
	var bv struct {
		LastDelivery struct {
			ID    string `json:"notification_id"`
			State string `json:"state"`
		} `json:"last_delivery"`
	}
	if tn.get("/v1/batches/hooked", &bv); bv.LastDelivery.ID != last.id || bv.LastDelivery.State != "delivered" {
		t.Fatalf("batch last_delivery = %+v, want %s delivered", bv.LastDelivery, last.id)
	}
	// Redeliver the first notification: it arrives again, same webhook-id.
	if code := tn.do("POST", "/v1/batches/hooked/webhook/deliveries/"+first[0].id+"/retry", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("retry: %d", code)
	}
	again := waitDelivered(3)
	if again[len(again)-1].id != first[0].id {
		t.Fatalf("redelivery id %s, want %s", again[len(again)-1].id, first[0].id)
	}
	tn.verify()
}

// TestEndpointWebhooks: an endpoint subscribed to the jobs surface gets
// document.processed per preprocess run and extraction.completed per
// session, each with a jobId that GET /v1/jobs/{jobId} resolves.
func TestEndpointWebhooks(t *testing.T) {
	t.Parallel()
	type note struct {
		Type string `json:"type"`
		Data struct {
			JobID      string `json:"jobId"`
			DocumentID string `json:"documentId"`
			SessionID  string `json:"sessionId"`
		} `json:"data"`
	}
	notes := make(chan note, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n note
		_ = json.NewDecoder(r.Body).Decode(&n)
		notes <- n
	}))
	defer srv.Close()
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback = true })
	body, _ := json.Marshal(map[string]any{"url": srv.URL, "events": []string{"document.processed", "extraction.completed"}})
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if code := tn.do("POST", "/v1/webhook-endpoints", bytes.NewReader(body), "application/json", nil, &ep); code != http.StatusCreated || ep.Secret == "" {
		t.Fatalf("create endpoint: %d %+v", code, ep)
	}
	doc := tn.uploadJobsDoc("a.txt", textInvoice(5))
	var created struct {
		JobID     string `json:"jobId"`
		SessionID string `json:"sessionId"`
	}
	if code := tn.postJSON("/v1/extraction-sessions", map[string]any{"documentIds": []string{doc}}, &created); code != http.StatusAccepted {
		t.Fatalf("session: %d", code)
	}
	seen := map[string]note{}
	deadline := time.After(time.Minute)
	for len(seen) < 2 {
		select {
		case n := <-notes:
			seen[n.Type] = n
		case <-deadline:
			t.Fatalf("notifications: %+v", seen)
		}
	}
	dn := seen["document.processed"]
	var run jobView
	if code := tn.get("/v1/jobs/"+dn.Data.JobID, &run); code != http.StatusOK || run.Type != "document_preprocess" || run.Status != "completed" || dn.Data.DocumentID != doc {
		t.Fatalf("document.processed jobId: %d %+v", code, run)
	}
	xn := seen["extraction.completed"]
	var withDelivery struct {
		LastDelivery *struct {
			Type string `json:"type"`
		} `json:"lastDelivery"`
	}
	tn.waitFor(func() bool {
		tn.get("/v1/jobs/"+xn.Data.JobID, &withDelivery)
		return withDelivery.LastDelivery != nil && withDelivery.LastDelivery.Type == "extraction.completed"
	})
	var job jobView
	if code := tn.get("/v1/jobs/"+xn.Data.JobID, &job); code != http.StatusOK || job.Type != "extraction" || job.Status != "completed" {
		t.Fatalf("extraction.completed jobId: %d %+v", code, job)
	}
	var list struct {
		Deliveries []struct {
			State string `json:"state"`
		} `json:"deliveries"`
	}
	tn.waitFor(func() bool {
		tn.get("/v1/webhook-endpoints/"+ep.ID+"/deliveries", &list)
		return len(list.Deliveries) == 2 && list.Deliveries[0].State == "delivered" && list.Deliveries[1].State == "delivered"
	})
}

// TestWebhookDeliveryCrash stops the node while a delivery is in flight (the
// receiver has not answered): after the restart the notification is
// delivered, and every copy the receiver saw has the same webhook-id.
func TestWebhookDeliveryCrash(t *testing.T) {
	t.Parallel()
	ids := make(chan string, 16)
	var mu sync.Mutex
	hang := true
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids <- r.Header.Get("webhook-id")
		mu.Lock()
		h := hang
		mu.Unlock()
		if h {
			select { // hold the first delivery until the node is gone
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	defer close(release)
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback, c.WebhookSchedule = true, "0s,20ms,20ms,20ms" })
	tn.upload("crash", "a.txt", textInvoice(1), "")
	body, _ := json.Marshal(map[string]string{"url": srv.URL})
	if code := tn.do("PUT", "/v1/batches/crash/webhook", bytes.NewReader(body), "application/json", nil, nil); code != http.StatusOK {
		t.Fatalf("PUT webhook: %d", code)
	}
	tn.do("POST", "/v1/batches/crash/process", nil, "", nil, nil)
	var first string
	select {
	case first = <-ids:
	case <-time.After(time.Minute):
		t.Fatal("no delivery attempt")
	}
	tn.stop() // the attempt in flight is never recorded
	mu.Lock()
	hang = false
	mu.Unlock()
	tn.start()
	var list struct {
		Deliveries []struct {
			ID    string `json:"notification_id"`
			State string `json:"state"`
		} `json:"deliveries"`
	}
	tn.waitFor(func() bool {
		tn.get("/v1/batches/crash/webhook/deliveries", &list)
		return len(list.Deliveries) == 1 && list.Deliveries[0].State == "delivered"
	})
	if list.Deliveries[0].ID != first {
		t.Fatalf("delivered %s, first attempt was %s", list.Deliveries[0].ID, first)
	}
	for len(ids) > 0 {
		if id := <-ids; id != first {
			t.Fatalf("a retry after the crash used webhook-id %s, want %s", id, first)
		}
	}
}
