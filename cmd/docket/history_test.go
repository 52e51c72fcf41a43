package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

type historyEvent struct {
	Partition     int32          `json:"partition"`
	Offset        int64          `json:"offset"`
	Type          string         `json:"type"`
	EventID       string         `json:"event_id"`
	OccurredAt    time.Time      `json:"occurred_at"`
	Actor         string         `json:"actor"`
	CorrelationID string         `json:"correlation_id"`
	Payload       map[string]any `json:"payload"`
}

// history walks every page of path (…/history) with the given page length.
func (tn *testNode) history(path string, limit int) []historyEvent {
	tn.t.Helper()
	var all []historyEvent
	cursor := ""
	for range 1000 {
		var page struct {
			Events     []historyEvent `json:"events"`
			NextCursor *string        `json:"next_cursor"`
		}
		q := fmt.Sprintf("%s?limit=%d", path, limit)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		if code := tn.get(q, &page); code != http.StatusOK {
			tn.t.Fatalf("GET %s: %d", q, code)
		}
		if len(page.Events) > limit {
			tn.t.Fatalf("GET %s: %d events on a page of %d", q, len(page.Events), limit)
		}
		all = append(all, page.Events...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
	tn.t.Fatalf("%s: too many pages", path)
	return nil
}

// checkAgainstLog requires every history event to be the record at its
// position of the org's log, and the history to be in log order.
func (tn *testNode) checkAgainstLog(h []historyEvent) {
	tn.t.Helper()
	log := tn.orgLog()
	p := tn.n.store.PartitionFor(domain.OrgID("default"))
	for i, e := range h {
		if e.Partition != p || e.Offset < 0 || e.Offset >= int64(len(log)) {
			tn.t.Fatalf("event %d at %d/%d: not in the org's partition %d", i, e.Partition, e.Offset, p)
		}
		if i > 0 && e.Offset <= h[i-1].Offset {
			tn.t.Fatalf("event %d at offset %d after %d: not in log order", i, e.Offset, h[i-1].Offset)
		}
		rec := log[e.Offset]
		m := rec.Event.Header()
		if rec.Event.Type() != e.Type || m.EventID != e.EventID || !m.OccurredAt.Equal(e.OccurredAt) || m.Actor != e.Actor || m.CorrelationID != e.CorrelationID {
			tn.t.Fatalf("event %d at offset %d is %s %s, the log has %s %s", i, e.Offset, e.Type, e.EventID, rec.Event.Type(), m.EventID)
		}
	}
}

func asOfQuery(t time.Time) string {
	return "as_of=" + url.QueryEscape(t.UTC().Format(time.RFC3339Nano))
}

func findEvent(t *testing.T, h []historyEvent, typ string) historyEvent {
	t.Helper()
	for _, e := range h {
		if e.Type == typ {
			return e
		}
	}
	t.Fatalf("no %s in %+v", typ, h)
	return historyEvent{}
}

// TestHistoryAndTimeTravel: a processed batch's documents and the batch
// itself show the events that shaped them, as in the log, page by page;
// as_of answers with the earlier and later states; other orgs get 404.
func TestHistoryAndTimeTravel(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	d1, code := tn.upload("hist", "a.txt", textInvoice(2), "PO-1")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	d2, code := tn.upload("hist", "b.txt", textInvoice(3), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/hist/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	final := tn.waitBatch("hist", func(b batchView) bool { return b.AllDone })

	h1 := tn.history("/v1/documents/"+d1.ID+"/history", 1000)
	var types []string
	for _, e := range h1 {
		types = append(types, e.Type)
	}
	want := []string{"DocumentUploaded", "DocumentQueued", "ProcessingStarted", "DocumentPreprocessed", "DocumentSucceeded"}
	if !slices.Equal(types, want) {
		t.Fatalf("document history %v, want %v", types, want)
	}
	tn.checkAgainstLog(h1)
	up := h1[0].Payload
	if up["document_id"] != d1.ID || up["batch_name"] != "hist" || up["file_name"] != "a.txt" || up["reference"] != "PO-1" || up["meta"] != nil {
		t.Fatalf("DocumentUploaded payload %v", up)
	}
	var now docView
	tn.get("/v1/documents/"+d1.ID, &now)
	if items, _ := h1[4].Payload["line_items"].([]any); len(items) != len(now.LineItems) || len(items) == 0 {
		t.Fatalf("DocumentSucceeded line_items %v, document has %d", h1[4].Payload["line_items"], len(now.LineItems))
	}

	// The batch's history is its documents' events, the same across page
	// sizes.
	hb := tn.history("/v1/batches/hist/history", 1000)
	tn.checkAgainstLog(hb)
	h2 := tn.history("/v1/documents/"+d2.ID+"/history", 2)
	if len(hb) != len(h1)+len(h2) {
		t.Fatalf("batch history has %d events, its documents %d + %d", len(hb), len(h1), len(h2))
	}
	if paged := tn.history("/v1/batches/hist/history", 3); !reflect.DeepEqual(paged, hb) {
		t.Fatalf("pages of 3 differ from one page:\n%v\n%v", paged, hb)
	}

	// Time travel on the document: before it existed, just uploaded,
	// processing, succeeded.
	uploaded, started, succeeded := h1[0].OccurredAt, findEvent(t, h1, "ProcessingStarted").OccurredAt, h1[4].OccurredAt
	if !started.Before(succeeded) {
		t.Fatalf("claim at %v is not before the result at %v", started, succeeded)
	}
	tn.call("GET", "/v1/documents/"+d1.ID+"?"+asOfQuery(uploaded.Add(-time.Microsecond)), "Bearer "+tn.key, nil, "", nil).
		envelope(t, http.StatusNotFound, "not_found")
	for _, c := range []struct {
		at     time.Time
		status string
		items  int
	}{{uploaded, "queued", 0}, {started, "processing", 0}, {succeeded, "succeeded", len(now.LineItems)}} {
		var d docView
		if code := tn.get("/v1/documents/"+d1.ID+"?"+asOfQuery(c.at), &d); code != http.StatusOK || d.Status != c.status || len(d.LineItems) != c.items {
			t.Fatalf("document as of %v: %d %+v, want %s", c.at, code, d, c.status)
		}
	}
	var latest, current docView
	tn.get("/v1/documents/"+d1.ID+"?"+asOfQuery(time.Now()), &latest)
	tn.get("/v1/documents/"+d1.ID, &current)
	if !reflect.DeepEqual(latest, current) {
		t.Fatalf("as of now %+v, current %+v", latest, current)
	}

	// Time travel on the batch: one document, then the finished batch.
	var b batchView
	if code := tn.get("/v1/batches/hist?"+asOfQuery(uploaded), &b); code != http.StatusOK || b.Total != 1 || b.Status != "queued" || b.AllDone {
		t.Fatalf("batch as of the first upload: %d %+v", code, b)
	}
	b = batchView{}
	if code := tn.get("/v1/batches/hist?"+asOfQuery(hb[len(hb)-1].OccurredAt), &b); code != http.StatusOK || !reflect.DeepEqual(b, final) {
		t.Fatalf("batch as of its last event: %d %+v, want %+v", code, b, final)
	}
	tn.call("GET", "/v1/batches/hist?"+asOfQuery(uploaded.Add(-time.Microsecond)), "Bearer "+tn.key, nil, "", nil).
		envelope(t, http.StatusNotFound, "not_found")

	// Bad as_of: 400 with the envelope, even for an unknown id.
	for _, path := range []string{"/v1/documents/" + d1.ID, "/v1/batches/hist", "/v1/documents/nope"} {
		for _, q := range []string{"as_of=yesterday", "as_of=", asOfQuery(time.Now().Add(time.Hour))} {
			tn.call("GET", path+"?"+q, "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusBadRequest, "invalid_request")
		}
	}
	tn.call("GET", "/v1/batches/hist/history?cursor=AAAA", "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusBadRequest, "invalid_request")
	tn.call("GET", "/v1/batches/hist/history?limit=1001", "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusBadRequest, "invalid_request")

	// Another org: the same 404 as unknown ids, for history and as_of.
	other := "Bearer " + tn.createOrg("history-other")
	for _, path := range []string{
		"/v1/documents/" + d1.ID + "/history", "/v1/batches/hist/history", "/v1/documents/nope/history", "/v1/batches/nope/history",
		"/v1/documents/" + d1.ID + "?" + asOfQuery(succeeded), "/v1/batches/hist?" + asOfQuery(succeeded),
	} {
		tn.call("GET", path, other, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
	}
	tn.verify()
}

// TestJobHistoryAndTimeTravel: an extraction job's history holds its own
// events and its document's runs that served it; as_of shows it queued,
// then completed; another org's key gets 404 for the same handle.
func TestJobHistoryAndTimeTravel(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	doc := tn.uploadJobsDoc("a.txt", textInvoice(2))
	var created struct {
		JobID string `json:"jobId"`
	}
	if code := tn.postJSON("/v1/extraction-sessions", map[string]any{"documentIds": []string{doc}}, &created); code != http.StatusAccepted {
		t.Fatalf("session: %d", code)
	}
	final := tn.waitJob(created.JobID, func(j jobView) bool { return j.Status == "completed" })
	h := tn.history("/v1/jobs/"+created.JobID+"/history", 2)
	tn.checkAgainstLog(h)
	if h[0].Type != "JobCreated" || h[len(h)-1].Type != "JobCompleted" {
		t.Fatalf("job history from %s to %s", h[0].Type, h[len(h)-1].Type)
	}
	if ids, _ := h[0].Payload["document_ids"].([]any); len(ids) != 1 || ids[0] != doc {
		t.Fatalf("JobCreated payload %v", h[0].Payload)
	}
	findEvent(t, h, "DocumentSucceeded")
	if slices.ContainsFunc(h, func(e historyEvent) bool { return e.Type == "DocumentUploaded" }) {
		t.Fatal("the upload, before the job, is in the job's history")
	}

	createdAt, completedAt := h[0].OccurredAt, h[len(h)-1].OccurredAt
	tn.call("GET", "/v1/jobs/"+created.JobID+"?"+asOfQuery(createdAt.Add(-time.Microsecond)), "Bearer "+tn.key, nil, "", nil).
		envelope(t, http.StatusNotFound, "not_found")
	var then jobView
	if code := tn.get("/v1/jobs/"+created.JobID+"?"+asOfQuery(createdAt), &then); code != http.StatusOK || then.Status != "queued" ||
		then.Progress == nil || then.Progress.Done != 0 || then.Result.Results != nil {
		t.Fatalf("job as of its creation: %d %+v", code, then)
	}
	then = jobView{}
	if code := tn.get("/v1/jobs/"+created.JobID+"?"+asOfQuery(completedAt), &then); code != http.StatusOK || then.Status != "completed" ||
		!reflect.DeepEqual(then.Result, final.Result) || *then.Duration != *final.Duration {
		t.Fatalf("job as of its completion: %d %+v, want %+v", code, then, final)
	}
	tn.call("GET", "/v1/jobs/"+created.JobID+"?as_of=nope", "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusBadRequest, "invalid_request")

	other := "Bearer " + tn.createOrg("job-history-other")
	for _, path := range []string{"/v1/jobs/" + created.JobID + "/history", "/v1/jobs/" + created.JobID + "?" + asOfQuery(completedAt)} {
		tn.call("GET", path, other, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
	}
	tn.verify()
}

// TestBatchHistoryWebhook: a batch's history shows its webhook
// registration, with the signing secret redacted, and each delivery
// attempt of its notification.
func TestBatchHistoryWebhook(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback = true })
	secret := tn.uploadHooked("hooked", srv.URL+"/hook")
	if code := tn.do("POST", "/v1/batches/hooked/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	var h []historyEvent
	tn.waitFor(func() bool {
		h = tn.history("/v1/batches/hooked/history", 1000)
		return slices.ContainsFunc(h, func(e historyEvent) bool { return e.Type == "WebhookDeliveryAttempted" })
	})
	tn.checkAgainstLog(h)
	set := findEvent(t, h, "BatchWebhookSet").Payload
	if set["secret"] != "[redacted]" || set["url"] != srv.URL+"/hook" || set["batch_name"] != "hooked" {
		t.Fatalf("BatchWebhookSet payload %v", set)
	}
	if attempt := findEvent(t, h, "WebhookDeliveryAttempted").Payload; attempt["outcome"] != "delivered" || attempt["http_status"] != float64(204) {
		t.Fatalf("WebhookDeliveryAttempted payload %v", attempt)
	}
	raw := tn.call("GET", "/v1/batches/hooked/history", "Bearer "+tn.key, nil, "", nil)
	if bytes.Contains(raw.body, []byte(secret)) || bytes.Contains(raw.body, []byte(strings.TrimPrefix(secret, "whsec_"))) {
		t.Fatal("the history shows the webhook secret")
	}
	tn.verify()
}

// uploadHooked uploads one document into batch and registers a webhook to
// url for it; it returns the signing secret.
func (tn *testNode) uploadHooked(batch, url string) string {
	tn.t.Helper()
	if _, code := tn.upload(batch, "a.txt", textInvoice(1), ""); code != http.StatusCreated {
		tn.t.Fatalf("upload: %d", code)
	}
	var reg struct {
		Secret string `json:"secret"`
	}
	body, _ := json.Marshal(map[string]string{"url": url})
	if code := tn.do("PUT", "/v1/batches/"+batch+"/webhook", bytes.NewReader(body), "application/json", nil, &reg); code != http.StatusOK || reg.Secret == "" {
		tn.t.Fatalf("PUT webhook: %d %+v", code, reg)
	}
	return reg.Secret
}
