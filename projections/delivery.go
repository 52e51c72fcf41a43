package projections

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// DefaultSchedule is the webhook retry schedule: the first attempt at once,
// then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h; each wait gets ±10 %
// jitter so that many receivers coming back at once are not hit together.
var DefaultSchedule = []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// PostResult is the answer to one delivery attempt.
type PostResult struct {
	Status     int
	Latency    time.Duration
	RetryAfter time.Duration
	Outcome    string // domain.DeliveryDelivered, DeliveryRetry, DeliveryGone or DeliveryRefused
	Err        error
}

// Poster sends one signed notification (cmd/docket adapts webhook.Client).
type Poster interface {
	Post(ctx context.Context, n domain.Notification) PostResult
}

// Delivery is the webhook delivery duty. It runs on every node but acts
// only on the partitions the node owns in the duties group; each attempt is
// appended as WebhookDeliveryAttempted with an id derived from the
// notification and the attempt number, so after a hand-over a repeated
// attempt is at worst delivered twice (the receiver sees the same
// webhook-id) and recorded once.
type Delivery struct {
	Store       *eventstore.Store
	Views       *Views
	Owned       func() []int32
	Post        Poster
	Schedule    []time.Duration // default DefaultSchedule
	Concurrency int             // default 16
	Log         zerolog.Logger

	inflight sync.Map // notification id -> struct{}
}

// Run delivers until ctx ends. Due times are wall-clock deadlines, so the
// duty looks for due notifications on a short tick (200 ms), and at once in
// the partitions of every applied fetch.
func (d *Delivery) Run(ctx context.Context) error {
	if len(d.Schedule) == 0 {
		d.Schedule = DefaultSchedule
	}
	if d.Concurrency == 0 {
		d.Concurrency = 16
	}
	sem := make(chan struct{}, d.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	// New notifications are created by applied events: looking at once at
	// the partitions a fetch touched saves the tick's wait (≈ 100 ms on
	// average, the largest hop of the lifecycle in the bench); the tick
	// still finds retries whose time came, and everything after a dropped
	// subscription.
	applied, unsubscribe := d.Views.Subscribe(64)
	defer func() { unsubscribe() }()
	for {
		parts := d.Owned()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case recs, ok := <-applied:
			if !ok {
				applied, unsubscribe = d.Views.Subscribe(64)
				break
			}
			parts = touchedOwned(parts, recs)
		}
		for _, p := range parts {
			due, err := d.Views.DueNotifications(p, time.Now(), 256)
			if err != nil {
				return err
			}
			for _, n := range due {
				if _, busy := d.inflight.LoadOrStore(n.ID, struct{}{}); busy {
					continue
				}
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return nil
				}
				wg.Add(1)
				go func(n domain.Notification) {
					defer wg.Done()
					defer func() { <-sem }()
					defer d.inflight.Delete(n.ID)
					if err := d.attempt(ctx, n); err != nil && ctx.Err() == nil {
						d.Log.Warn().Err(err).Str("notification", n.ID).Msg("delivery not recorded")
					}
				}(n)
			}
		}
	}
}

// attempt delivers once and records the attempt, then waits until the views
// applied it, so the due queue no longer offers the same attempt.
func (d *Delivery) attempt(ctx context.Context, n domain.Notification) error {
	res := d.Post.Post(ctx, n)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	attempt := n.Attempts + 1
	meta := eventstore.NewMeta(n.OrgID, "duty:webhooks", n.ID)
	meta.EventID = fmt.Sprintf("evt_dlv_%s_%d", n.ID, attempt)
	ev := &domain.WebhookDeliveryAttempted{
		Meta: meta, NotificationID: n.ID, Attempt: attempt, HTTPStatus: res.Status,
		LatencyMillis: res.Latency.Milliseconds(), Outcome: res.Outcome,
	}
	if res.Err != nil {
		ev.Error = res.Err.Error()
	}
	if res.Outcome == domain.DeliveryRetry {
		if attempt >= len(d.Schedule) {
			ev.Outcome = domain.DeliveryExhausted
		} else {
			wait := d.Schedule[attempt]
			wait += time.Duration((rand.Float64()*0.2 - 0.1) * float64(wait))
			wait = max(wait, res.RetryAfter)
			next := time.Now().Add(wait).UTC().Truncate(time.Microsecond)
			ev.NextAttemptAt = &next
		}
	}
	pos, err := d.Store.Append(ctx, ev)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return d.Views.WaitAll(wctx, pos)
}

// touchedOwned keeps the owned partitions that recs touched.
func touchedOwned(owned []int32, recs []eventstore.Record) []int32 {
	out := owned[:0]
	for _, p := range owned {
		for _, r := range recs {
			if r.Partition == p {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
