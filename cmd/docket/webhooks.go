package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/api"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/projections"
	"github.com/docket/docket/webhook"
)

// poster signs a notification per the Standard Webhooks specification and
// sends it with the SSRF-safe client.
type poster struct {
	client  *webhook.Client
	handles *api.Signer
	ttl     time.Duration
	observe func(outcome string) // counts attempts (metrics); may be nil
	log     zerolog.Logger
}

func (p poster) Post(ctx context.Context, n domain.Notification) projections.PostResult {
	secret, err := webhook.ParseSecret(n.Secret)
	if err != nil {
		return projections.PostResult{Outcome: domain.DeliveryRefused, Err: err}
	}
	body := n.Payload
	if len(body) == 0 {
		body = p.payload(n)
	}
	h := webhook.Headers(n.ID, time.Now(), body, secret)
	res := p.client.Deliver(ctx, n.URL, h, body)
	if p.observe != nil {
		p.observe(res.Outcome.String())
	}
	// The URL is not logged: receivers put tokens in them.
	l := p.log.Info()
	if res.Err != nil {
		l = p.log.Warn().Err(res.Err)
	}
	l = l.Str("org", n.OrgID).Str("notification", n.ID).Str("event", n.EventType)
	if n.Endpoint {
		l = l.Str("endpoint", n.Target)
	} else {
		l = l.Str("batch", n.Target)
	}
	if n.DocumentID != "" {
		l = l.Str("document", n.DocumentID)
	}
	if n.JobID != "" {
		l = l.Str("job", n.JobID)
	}
	l.Int("attempt", n.Attempts+1).Int("status", res.Status).Str("outcome", res.Outcome.String()).Dur("took", res.Latency).Msg("webhook attempt")
	return projections.PostResult{Status: res.Status, Latency: res.Latency, RetryAfter: res.RetryAfter, Outcome: res.Outcome.String(), Err: res.Err}
}

// payload renders a jobs-surface notification: thin, with the signed jobId
// the receiver fetches the outcome with. The handle's expiry derives from
// the notification's creation, so every retry (from any node sharing the
// keys) sends the same body.
func (p poster) payload(n domain.Notification) []byte {
	exp := n.CreatedAt.Add(p.ttl)
	data := map[string]any{}
	if n.DocumentID != "" {
		data["documentId"] = n.DocumentID
		data["jobId"] = p.handles.Sign(n.OrgID, api.Handle{Kind: api.HandleKindDocumentPreprocess, Subject: api.DocumentRunSubject(n.DocumentID, n.Attempt), Expires: exp})
	} else {
		data["jobId"] = p.handles.Sign(n.OrgID, api.Handle{Kind: api.HandleKindExtraction, Subject: n.JobID, Expires: exp})
		data["sessionId"] = p.handles.Sign(n.OrgID, api.Handle{Kind: api.HandleKindSession, Subject: n.SessionID, Expires: exp})
	}
	b, _ := json.Marshal(map[string]any{"type": n.EventType, "timestamp": n.CreatedAt.UTC().Format(time.RFC3339Nano), "data": data})
	return b
}
