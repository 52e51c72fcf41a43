package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// errOutcomeUnknown: an append was not acknowledged in time. The producer
// keeps it and may still write it once the brokers answer, so the request
// may or may not have taken effect; an Idempotency-Key keeps a retry from
// doing it twice.
var errOutcomeUnknown = errors.New("api: the event log did not acknowledge the write in time; it may still be recorded")

// probeEvery is how often, at most, a write checks that a broker answers.
const probeEvery = time.Second

// brokerProbe remembers whether a broker answered recently, so that during
// an outage writes are refused at once (503) instead of waiting on the
// producer, while reads go on from the views.
type brokerProbe struct {
	mu     sync.Mutex
	at     time.Time
	up     bool
	cause  error
	checks func(context.Context) error
}

func (p *brokerProbe) check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.at) < probeEvery {
		if p.up {
			return nil
		}
		return p.cause
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := p.checks(ctx)
	p.at, p.up = time.Now(), err == nil
	if err == nil {
		return nil
	}
	p.cause = fmt.Errorf("%w: no Kafka broker answers: %w", eventstore.ErrUnavailable, err)
	return p.cause
}

// down records a failed append, so that the next writes are refused at
// once until a probe finds a broker again.
func (p *brokerProbe) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at, p.up = time.Now(), false
	p.cause = fmt.Errorf("%w: no Kafka broker answers: a write was not acknowledged", eventstore.ErrUnavailable)
}

// writable refuses writes with 503 and Retry-After while no broker answers.
func (s *Server) writable(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && s.probe != nil {
			if err := s.probe.check(r.Context()); err != nil {
				w.Header().Set("Retry-After", "5")
				writeError(w, r, err)
				return
			}
		}
		next(w, r)
	}
}

// append appends and waits for the acknowledgement at most AppendTimeout.
func (s *Server) append(ctx context.Context, events ...domain.Event) ([]eventstore.Position, error) {
	wait := s.store.AppendAsync(ctx, events...)
	type res struct {
		pos []eventstore.Position
		err error
	}
	done := make(chan res, 1)
	go func() {
		pos, err := wait()
		done <- res{pos, err}
	}()
	t := time.NewTimer(s.cfg.AppendTimeout)
	defer t.Stop()
	var r res
	select {
	case r = <-done:
	case <-t.C:
		r.err = fmt.Errorf("%w: %w", eventstore.ErrUnavailable, errOutcomeUnknown)
	}
	if eventstore.IsRetryable(r.err) && s.probe != nil {
		s.probe.down()
	}
	return r.pos, r.err
}
