package main

import (
	"context"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/projections"
	"github.com/docket/docket/webhook"
)

// poster signs a notification per the Standard Webhooks specification and
// sends it with the SSRF-safe client.
type poster struct{ client *webhook.Client }

func (p poster) Post(ctx context.Context, n domain.Notification) projections.PostResult {
	secret, err := webhook.ParseSecret(n.Secret)
	if err != nil {
		return projections.PostResult{Outcome: domain.DeliveryRefused, Err: err}
	}
	h := webhook.Headers(n.ID, time.Now(), n.Payload, secret)
	res := p.client.Deliver(ctx, n.URL, h, n.Payload)
	return projections.PostResult{Status: res.Status, Latency: res.Latency, RetryAfter: res.RetryAfter, Outcome: res.Outcome.String(), Err: res.Err}
}
