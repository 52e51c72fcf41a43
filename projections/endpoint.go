package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
)

// endpointProjection keeps the jobs surface's webhook endpoints
// (we/<org>/<id>) and creates their notifications: document.* once per
// document preprocess run, extraction.* once per session. Payloads are thin
// and carry a signed jobId, which the delivering node signs from the
// notification's subject, so they are not stored here.
type endpointProjection struct{}

func endpointKey(org, id string) []byte { return []byte("we/" + org + "/" + id) }

// subjectNotifPrefix indexes notifications by what they are about (a job, or
// a document's preprocess run), so job responses can show their delivery.
func subjectNotifPrefix(org, subject string) []byte {
	return []byte("jn/" + org + "/" + subject + "/")
}
func endpointPrefix(org string) []byte { return []byte("we/" + org + "/") }
func endpointNotifPrefix(org, id string) []byte {
	return []byte("en/" + org + "/" + id + "/")
}

func (endpointProjection) apply(tx *Tx) error {
	switch ev := tx.rec.Event.(type) {
	case *domain.WebhookEndpointCreated:
		return tx.put(endpointKey(ev.Meta.OrgID, ev.EndpointID), domain.Endpoint{
			ID: ev.EndpointID, OrgID: ev.Meta.OrgID, URL: ev.URL, Events: ev.Events, Secret: ev.Secret, CreatedAt: ev.Meta.OccurredAt,
		})
	case *domain.WebhookEndpointDeleted:
		return tx.del(endpointKey(ev.Meta.OrgID, ev.EndpointID))
	}
	return nil
}

// notify creates one notification of eventType per subscribed endpoint.
func (endpointProjection) notify(tx *Tx, org, eventType string, fill func(*domain.Notification)) error {
	eps, err := tx.endpoints(org)
	if err != nil {
		return err
	}
	at := tx.rec.Event.Header().OccurredAt
	for _, e := range eps {
		if e.Disabled || !slices.Contains(e.Events, eventType) {
			continue
		}
		sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d/%d", org, e.ID, tx.rec.Partition, tx.rec.Offset))
		n := domain.Notification{
			ID: "msg_" + hex.EncodeToString(sum[:13]), OrgID: org, Partition: tx.rec.Partition,
			Target: e.ID, Endpoint: true, URL: e.URL, Secret: e.Secret, EventType: eventType,
			CreatedAt: at, State: "pending", NextAt: at,
		}
		fill(&n)
		if err := tx.set(append(endpointNotifPrefix(org, e.ID), n.ID...), nil); err != nil {
			return err
		}
		if err := tx.set(append(subjectNotifPrefix(org, n.Subject()), n.ID...), nil); err != nil {
			return err
		}
		if err := putNotification(tx, n); err != nil {
			return err
		}
	}
	return nil
}

// documentRun fires document.* when a document's preprocess run ends.
func (p endpointProjection) documentRun(tx *Tx, before, after *domain.Document) error {
	if len(after.Runs) == 0 {
		return nil
	}
	run := after.Runs[len(after.Runs)-1]
	if slices.ContainsFunc(before.Runs, func(r domain.Run) bool { return r.Attempt == run.Attempt }) {
		return nil
	}
	eventType := domain.EventDocumentProcessed
	switch run.Status {
	case domain.JobStatusCompleted:
	case domain.JobStatusFailed:
		eventType = domain.EventDocumentProcessingFailed
	default:
		return nil
	}
	return p.notify(tx, after.OrgID, eventType, func(n *domain.Notification) {
		n.DocumentID, n.Attempt = after.ID, run.Attempt
	})
}

// jobDone fires extraction.* once per session, when its job ends.
func (p endpointProjection) jobDone(tx *Tx, j domain.Job) error {
	if j.Kind != domain.JobExtraction || !j.Status().Terminal() {
		return nil
	}
	eventType := domain.EventExtractionCompleted
	if s := j.Status(); s == domain.JobStatusFailed || s == domain.JobStatusCancelled {
		eventType = domain.EventExtractionFailed
	}
	return p.notify(tx, j.OrgID, eventType, func(n *domain.Notification) {
		n.JobID, n.SessionID = j.ID, j.SessionID
	})
}

// endpointCache keeps each org's endpoints as the views committed them, for
// notify: every document whose run ends asks, and a Pebble iterator over
// an org that usually has none cost a tenth of the fold
// (BenchmarkApplyLifecycle). It belongs to the apply goroutine. A write to
// an org's endpoints drops its entry and keeps it out until the fetch
// commits (Tx.endpoints), so an entry never holds what a fetch that failed
// wrote. At most endpointCacheOrgs orgs are kept; past that it starts over.
type endpointCache map[string][]domain.Endpoint

const endpointCacheOrgs = 4096

// endpoints is org's endpoints, from the cache unless this fetch wrote
// them.
func (tx *Tx) endpoints(org string) ([]domain.Endpoint, error) {
	cache := &tx.views.endpoints
	if tx.fb.prevWroteEndpoints(org) {
		// Its write dropped the cached ones; Pebble has its own once it
		// commits.
		if err := tx.fb.settle(); err != nil {
			return nil, err
		}
	}
	if !tx.endpointsWritten[org] {
		if eps, ok := (*cache)[org]; ok {
			return eps, nil
		}
	}
	// Iterating through the index would make one for a fetch that did not
	// write the org's endpoints, whose committed ones are the answer.
	var r pebble.Reader = tx.views.db
	if tx.endpointsWritten[org] {
		ib, err := tx.fb.indexed()
		if err != nil {
			return nil, err
		}
		r = ib
	}
	eps, err := scanEndpoints(r, org)
	if err != nil || tx.endpointsWritten[org] {
		return eps, err
	}
	if *cache == nil || len(*cache) >= endpointCacheOrgs {
		*cache = endpointCache{}
	}
	(*cache)[org] = eps
	return eps, nil
}

// scanEndpoints reads org's endpoints from r.
func scanEndpoints(r pebble.Reader, org string) ([]domain.Endpoint, error) {
	var out []domain.Endpoint
	err := scan(r, endpointPrefix(org), nil, func(_, val []byte) (bool, error) {
		var e domain.Endpoint
		if err := decodeView(val, &e); err != nil {
			return false, err
		}
		out = append(out, e)
		return true, nil
	})
	return out, err
}

// endpointWritten notes a write of key: if it is an endpoint, its org's
// cached endpoints are dropped, and not cached again in this fetch.
func (tx *Tx) endpointWritten(key []byte) {
	if !bytes.HasPrefix(key, endpointRoot) {
		return
	}
	org, _, _ := bytes.Cut(key[len(endpointRoot):], []byte("/"))
	delete(tx.views.endpoints, string(org))
	if tx.endpointsWritten != nil {
		tx.endpointsWritten[string(org)] = true
	}
}

var endpointRoot = []byte("we/")
