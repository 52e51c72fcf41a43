package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestIsolationMatrix calls every endpoint that takes an id, a name or a
// handle with another org's ids and handles, and requires the answer to be
// byte for byte the 404 an unknown id gets; afterwards the owner's state is
// untouched. The matrix is checked against the OpenAPI paths, so a new
// endpoint with a path parameter must be added here.
func TestIsolationMatrix(t *testing.T) {
	t.Parallel()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer hook.Close()
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback = true })
	owner := "Bearer " + tn.key
	attacker := "Bearer " + tn.createOrg("attacker")

	// The owner's resources: a finished batch with a webhook and its
	// notification, a jobs-surface document, a preprocess job, an
	// extraction session, a webhook endpoint with a notification, a key.
	d, code := tn.upload("iso", "a.txt", textInvoice(1), "ref")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	hookBody := `{"url":"` + hook.URL + `/h"}`
	tn.call("PUT", "/v1/batches/iso/webhook", owner, strings.NewReader(hookBody), "application/json", nil).decode(t, http.StatusOK, &map[string]any{})
	var ep struct {
		ID string `json:"id"`
	}
	tn.call("POST", "/v1/webhook-endpoints", owner, strings.NewReader(`{"url":"`+hook.URL+`/e","events":["document.processed"]}`), "application/json", nil).decode(t, http.StatusCreated, &ep)
	if code := tn.do("POST", "/v1/batches/iso/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	tn.waitBatch("iso", func(b batchView) bool { return b.AllDone })
	doc := tn.uploadJobsDoc("j.txt", textInvoice(2))
	job := tn.startJob("/v1/documents/process", doc)
	tn.waitJob(job, func(j jobView) bool { return terminalJob(j.Status) })
	var ses struct {
		JobID     string `json:"jobId"`
		SessionID string `json:"sessionId"`
	}
	if code := tn.postJSON("/v1/extraction-sessions", map[string]any{"documentIds": []string{doc}}, &ses); code != http.StatusAccepted {
		t.Fatalf("session: %d", code)
	}
	var key keyView
	tn.call("POST", "/v1/api-keys", owner, nil, "", nil).decode(t, http.StatusCreated, &key)
	notes := func(path string) string {
		var out struct {
			Deliveries []soakNote `json:"deliveries"`
		}
		tn.waitFor(func() bool {
			tn.call("GET", path, owner, nil, "", nil).decode(t, http.StatusOK, &out)
			return len(out.Deliveries) > 0
		})
		return out.Deliveries[0].ID
	}
	batchNote := notes("/v1/batches/iso/webhook/deliveries")
	epNote := notes("/v1/webhook-endpoints/" + ep.ID + "/deliveries")

	// The attacker owns a batch of the same name and an endpoint of its
	// own, so that paths mixing its own ids with the owner's reach the
	// foreign one.
	body, ct := multipartBody(t, "mine.txt", textInvoice(3), "")
	tn.call("POST", "/v1/batches/iso/documents", attacker, body, ct, nil).decode(t, http.StatusCreated, &docView{})
	tn.call("PUT", "/v1/batches/iso/webhook", attacker, strings.NewReader(hookBody), "application/json", nil).decode(t, http.StatusOK, &map[string]any{})
	body, ct = multipartBody(t, "mine.txt", textInvoice(4), "")
	tn.call("POST", "/v1/batches/mine/documents", attacker, body, ct, nil).decode(t, http.StatusCreated, &docView{})
	var aep struct {
		ID string `json:"id"`
	}
	tn.call("POST", "/v1/webhook-endpoints", attacker, strings.NewReader(`{"url":"`+hook.URL+`/a","events":["document.processed"]}`), "application/json", nil).decode(t, http.StatusCreated, &aep)

	// Each case: the template it covers, the request with the owner's
	// ids, and the same with unknown ones.
	type req struct{ method, path, body string }
	js := func(ids ...string) string { b, _ := json.Marshal(map[string]any{"documentIds": ids}); return string(b) }
	cases := []struct {
		template       string
		foreign, known req
	}{
		{"/v1/batches/{batch_name}", req{"DELETE", "/v1/batches/owned", ""}, req{"DELETE", "/v1/batches/nosuch", ""}},
		{"/v1/batches/{batch_name}", req{"GET", "/v1/batches/owned", ""}, req{"GET", "/v1/batches/nosuch", ""}},
		{"/v1/batches/{batch_name}/process", req{"POST", "/v1/batches/owned/process", ""}, req{"POST", "/v1/batches/nosuch/process", ""}},
		{"/v1/batches/{batch_name}/results", req{"GET", "/v1/batches/owned/results", ""}, req{"GET", "/v1/batches/nosuch/results", ""}},
		{"/v1/batches/{batch_name}/events", req{"GET", "/v1/batches/owned/events", ""}, req{"GET", "/v1/batches/nosuch/events", ""}},
		{"/v1/batches/{batch_name}/webhook", req{"GET", "/v1/batches/owned/webhook", ""}, req{"GET", "/v1/batches/nosuch/webhook", ""}},
		{"/v1/batches/{batch_name}/webhook", req{"PUT", "/v1/batches/owned/webhook", hookBody}, req{"PUT", "/v1/batches/nosuch/webhook", hookBody}},
		{"/v1/batches/{batch_name}/webhook", req{"DELETE", "/v1/batches/owned/webhook", ""}, req{"DELETE", "/v1/batches/nosuch/webhook", ""}},
		{"/v1/batches/{batch_name}/webhook/deliveries", req{"GET", "/v1/batches/owned/webhook/deliveries", ""}, req{"GET", "/v1/batches/nosuch/webhook/deliveries", ""}},
		{"/v1/batches/{batch_name}/webhook/deliveries/{notification_id}/retry",
			req{"POST", "/v1/batches/iso/webhook/deliveries/" + batchNote + "/retry", ""}, req{"POST", "/v1/batches/iso/webhook/deliveries/ntf_nosuch/retry", ""}},
		{"/v1/documents/{id}", req{"GET", "/v1/documents/" + d.ID, ""}, req{"GET", "/v1/documents/doc_nosuch", ""}},
		{"/v1/documents/{id}", req{"GET", "/v1/documents/" + doc, ""}, req{"GET", "/v1/documents/doc_nosuch", ""}},
		{"/v1/documents/process", req{"POST", "/v1/documents/process", js(doc)}, req{"POST", "/v1/documents/process", js("doc_nosuch")}},
		{"/v1/extraction-sessions", req{"POST", "/v1/extraction-sessions", js(doc)}, req{"POST", "/v1/extraction-sessions", js("doc_nosuch")}},
		{"/v1/extraction-sessions/{sessionId}/results", req{"GET", "/v1/extraction-sessions/" + ses.SessionID + "/results", ""}, req{"GET", "/v1/extraction-sessions/ses_AAAA/results", ""}},
		{"/v1/jobs/{jobId}", req{"GET", "/v1/jobs/" + job, ""}, req{"GET", "/v1/jobs/job_AAAA", ""}},
		{"/v1/jobs/{jobId}", req{"GET", "/v1/jobs/" + ses.JobID, ""}, req{"GET", "/v1/jobs/job_AAAA", ""}},
		{"/v1/jobs/{jobId}/cancel", req{"POST", "/v1/jobs/" + ses.JobID + "/cancel", ""}, req{"POST", "/v1/jobs/job_AAAA/cancel", ""}},
		{"/v1/jobs/{jobId}/events", req{"GET", "/v1/jobs/" + job + "/events", ""}, req{"GET", "/v1/jobs/job_AAAA/events", ""}},
		{"/v1/webhook-endpoints/{id}", req{"GET", "/v1/webhook-endpoints/" + ep.ID, ""}, req{"GET", "/v1/webhook-endpoints/ep_nosuch", ""}},
		{"/v1/webhook-endpoints/{id}", req{"DELETE", "/v1/webhook-endpoints/" + ep.ID, ""}, req{"DELETE", "/v1/webhook-endpoints/ep_nosuch", ""}},
		{"/v1/webhook-endpoints/{id}/deliveries", req{"GET", "/v1/webhook-endpoints/" + ep.ID + "/deliveries", ""}, req{"GET", "/v1/webhook-endpoints/ep_nosuch/deliveries", ""}},
		{"/v1/webhook-endpoints/{id}/deliveries/{notification_id}/retry",
			req{"POST", "/v1/webhook-endpoints/" + ep.ID + "/deliveries/" + epNote + "/retry", ""}, req{"POST", "/v1/webhook-endpoints/ep_nosuch/deliveries/ntf_nosuch/retry", ""}},
		{"/v1/webhook-endpoints/{id}/deliveries/{notification_id}/retry",
			req{"POST", "/v1/webhook-endpoints/" + aep.ID + "/deliveries/" + epNote + "/retry", ""}, req{"POST", "/v1/webhook-endpoints/" + aep.ID + "/deliveries/ntf_nosuch/retry", ""}},
		{"/v1/api-keys/{id}", req{"DELETE", "/v1/api-keys/" + key.ID, ""}, req{"DELETE", "/v1/api-keys/key_nosuch", ""}},
		// Event history.
		{"/v1/documents/{id}/history", req{"GET", "/v1/documents/" + d.ID + "/history", ""}, req{"GET", "/v1/documents/doc_nosuch/history", ""}},
		{"/v1/batches/{batch_name}/history", req{"GET", "/v1/batches/owned/history", ""}, req{"GET", "/v1/batches/nosuch/history", ""}},
		{"/v1/jobs/{jobId}/history", req{"GET", "/v1/jobs/" + job + "/history", ""}, req{"GET", "/v1/jobs/job_AAAA/history", ""}},
	}
	// The owner's batch is "iso"; "owned" stands for it where the attacker
	// has no batch of that name.
	for i := range cases {
		cases[i].foreign.path = strings.Replace(cases[i].foreign.path, "/batches/owned", "/batches/iso-owner", 1)
	}
	body, ct = multipartBody(t, "o.txt", textInvoice(5), "")
	tn.call("POST", "/v1/batches/iso-owner/documents", owner, body, ct, nil).decode(t, http.StatusCreated, &docView{})
	tn.call("PUT", "/v1/batches/iso-owner/webhook", owner, strings.NewReader(hookBody), "application/json", nil).decode(t, http.StatusOK, &map[string]any{})
	before := tn.logEnd()

	hc := &http.Client{Timeout: 10 * time.Second} // a stream that opened would be a failure, not a hang
	do := func(r req) (int, []byte) {
		var rd io.Reader
		ct := ""
		if r.body != "" {
			rd, ct = strings.NewReader(r.body), "application/json"
		}
		hr, err := http.NewRequest(r.method, tn.url(r.path), rd)
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Authorization", attacker)
		hr.Header.Set("X-Request-Id", "req_isolation")
		if ct != "" {
			hr.Header.Set("Content-Type", ct)
		}
		resp, err := hc.Do(hr)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	covered := map[string]bool{}
	for _, c := range cases {
		fc, fb := do(c.foreign)
		kc, kb := do(c.known)
		// An id that appears in a message is the one the caller sent.
		fb = bytes.ReplaceAll(fb, []byte(strings.TrimPrefix(c.foreign.path, "/v1/")), []byte(strings.TrimPrefix(c.known.path, "/v1/")))
		fb = bytes.ReplaceAll(fb, []byte(doc), []byte("doc_nosuch"))
		if fc != http.StatusNotFound || kc != http.StatusNotFound || !bytes.Equal(fb, kb) {
			t.Errorf("%s %s: %d %s\nunknown %s: %d %s", c.foreign.method, c.foreign.path, fc, fb, c.known.path, kc, kb)
		}
		covered[c.template] = true
	}
	var spec struct {
		Paths map[string]any `json:"paths"`
	}
	raw, err := os.ReadFile("../../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	// Batch names are per org: uploading to another org's batch name
	// makes the caller's own batch (TestAPIOrgIsolation checks it).
	covered["/v1/batches/{batch_name}/documents"] = true
	// The public event schemas belong to no org.
	covered["/v1/schemas/{name}"] = true
	// The console's static files belong to no org either.
	covered["/console/{asset}"] = true
	for p := range spec.Paths {
		if strings.Contains(p, "{") && !covered[p] {
			t.Errorf("%s takes an id but is not in the isolation matrix", p)
		}
	}

	// Nothing the attacker did reached the owner.
	// The owner's own work (its extraction session, webhook deliveries) may
	// still append; what must not be there is an event of the attacker's
	// requests, all sent with one request id (events carry it as their
	// correlation id).
	for _, r := range tn.orgLog() {
		if r.Offset >= before && r.Event.Header().CorrelationID == "req_isolation" {
			t.Errorf("the attacker's calls appended %s at offset %d", r.Event.Type(), r.Offset)
		}
	}
	tn.call("GET", "/v1/batches/iso-owner/webhook", owner, nil, "", nil).decode(t, http.StatusOK, &map[string]any{})
	tn.call("GET", "/v1/webhook-endpoints/"+ep.ID, owner, nil, "", nil).decode(t, http.StatusOK, &map[string]any{})
	if b := tn.waitBatch("iso-owner", func(batchView) bool { return true }); b.Total != 1 {
		t.Errorf("owner's batch now %+v", b)
	}
	var list struct {
		Keys []keyView `json:"api_keys"`
	}
	tn.call("GET", "/v1/api-keys", owner, nil, "", nil).decode(t, http.StatusOK, &list)
	for _, k := range list.Keys {
		if k.Revoked {
			t.Errorf("owner's key %s revoked", k.ID)
		}
	}
	tn.verify()
}
