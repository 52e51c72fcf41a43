package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// produceEveryEventType drives tn through the public API (and, for the one
// event no API writes, an operator's append) so that its log holds at least
// one event of every catalogue type. The worker is held by hold at first, so
// that documents can be canceled before they start.
func produceEveryEventType(t *testing.T, tn *testNode, hold chan struct{}) {
	t.Helper()
	// Canceled before starting: a batch deleted with a queued document
	// (BatchDeleted, DocumentCanceled) and a cancelled job
	// (JobCancelRequested, JobCancelled).
	_, code := tn.upload("gone", "a.txt", textInvoice(1), "")
	mustCode(t, "upload", code, http.StatusCreated)
	mustCode(t, "process", tn.do("POST", "/v1/batches/gone/process", nil, "", nil, nil), http.StatusAccepted)
	mustCode(t, "delete batch", tn.do("DELETE", "/v1/batches/gone", nil, "", nil, nil), http.StatusAccepted)
	job := tn.startJob("/v1/documents/process", tn.uploadJobsDoc("c.txt", textInvoice(2)))
	code, _ = tn.cancel(job)
	mustCode(t, "cancel job", code, http.StatusAccepted)
	tn.waitJob(job, func(j jobView) bool { return j.Status == "cancelled" })
	close(hold)

	// Webhooks: a batch webhook and an endpoint, a delivery and a
	// redelivery, then both removed.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	// Documents with an Idempotency-Key, one that succeeds and one that
	// fails, then processed (the batch completes: a webhook delivery).
	good, ct := multipartBody(t, "good.txt", textInvoice(3), "PO-3")
	mustCode(t, "upload with key", tn.do("POST", "/v1/batches/w/documents", good, ct, map[string]string{"Idempotency-Key": "k-1"}, nil), http.StatusCreated)
	mustCode(t, "PUT webhook", tn.do("PUT", "/v1/batches/w/webhook", jsonBody(map[string]string{"url": srv.URL}), "application/json", nil, nil), http.StatusOK)
	var ep struct {
		ID string `json:"id"`
	}
	mustCode(t, "POST endpoint", tn.do("POST", "/v1/webhook-endpoints",
		jsonBody(map[string]any{"url": srv.URL, "events": []string{domain.EventDocumentProcessed}}), "application/json", nil, &ep), http.StatusCreated)

	bad, _ := corpus(t, "inv-pacific-usd-truncated.pdf")
	_, code = tn.upload("w", "bad.pdf", bad, "")
	mustCode(t, "upload bad", code, http.StatusCreated)
	tn.processAndWait("w")
	var list struct {
		Deliveries []struct {
			NotificationID string `json:"notification_id"`
			Attempts       int    `json:"attempts"`
		} `json:"deliveries"`
	}
	tn.waitFor(func() bool {
		return tn.get("/v1/batches/w/webhook/deliveries", &list) == http.StatusOK && len(list.Deliveries) > 0 && list.Deliveries[0].Attempts > 0
	})
	mustCode(t, "redeliver", tn.do("POST", "/v1/batches/w/webhook/deliveries/"+list.Deliveries[0].NotificationID+"/retry", nil, "", nil, nil), http.StatusAccepted)

	// Jobs: a preprocess job completes, and a forced rerun reopens it.
	doc := tn.uploadJobsDoc("j.txt", textInvoice(4))
	first := tn.startJob("/v1/documents/process", doc)
	tn.waitJob(first, func(j jobView) bool { return j.Status == "completed" })
	mustCode(t, "force", tn.postJSON("/v1/documents/process", map[string]any{"documentIds": []string{doc}, "force": true}, nil), http.StatusAccepted)
	tn.waitJob(first, func(j jobView) bool { return j.Status == "completed" })

	mustCode(t, "DELETE webhook", tn.do("DELETE", "/v1/batches/w/webhook", nil, "", nil, nil), http.StatusNoContent)
	mustCode(t, "DELETE endpoint", tn.do("DELETE", "/v1/webhook-endpoints/"+ep.ID, nil, "", nil, nil), http.StatusNoContent)

	// Another org, and its key revoked. No API revokes keys yet, so the
	// event is appended as an operator tool would; the node must then
	// refuse the key. Likewise IdempotencyKeyReleased, which the API writes
	// only after a 5xx that no request can provoke from outside (a broken
	// blob store answers 400), is appended here with its claim; the node
	// must then let the key be used again.
	key := tn.createOrg("outside")
	var keyID string
	for _, r := range readAllLog(t, tn.n.store) {
		if k, ok := r.Event.(*domain.ApiKeyIssued); ok && k.Meta.OrgID == domain.OrgID("outside") {
			keyID = k.KeyID
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claim := eventstore.NewID("clm_")
	pos, err := tn.n.store.Append(ctx,
		&domain.ApiKeyRevoked{Meta: eventstore.NewMeta(domain.OrgID("outside"), "operator", ""), KeyID: keyID},
		&domain.IdempotencyKeyClaimed{Meta: eventstore.NewMeta("org_default", "operator", ""), Key: "k-2", RequestHash: "h", ClaimID: claim},
		&domain.IdempotencyKeyReleased{Meta: eventstore.NewMeta("org_default", "operator", ""), Key: "k-2", ClaimID: claim})
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.n.views.WaitAll(ctx, pos); err != nil {
		t.Fatal(err)
	}
	mustCode(t, "revoked key", tn.call("GET", "/v1/batches", "Bearer "+key, nil, "", nil).code, http.StatusUnauthorized)
	again, ct := multipartBody(t, "x.txt", textInvoice(5), "")
	mustCode(t, "released key reused", tn.do("POST", "/v1/batches/w/documents", again, ct, map[string]string{"Idempotency-Key": "k-2"}, nil), http.StatusCreated)
}
