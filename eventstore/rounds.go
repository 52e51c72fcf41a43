package eventstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// An append round is the records of one partition handed to the producer
// together. With AppendRounds set, a partition has at most that many rounds
// unacknowledged; appends that arrive meanwhile wait in the partition's
// queue and all go out as the next round when one is acknowledged. An
// idle partition's append goes out at once, as with no limit; a busy
// one's waits at most for the round ahead of it, and shares its request
// with every append that waited with it (group commit). franz-go alone
// sends a record as soon as fewer than five requests are in flight to its
// broker (the most an idempotent producer may have), so at a moderate
// load most of its requests carry one or two records.
//
// An append that would start a round waits up to RoundLinger for company
// first (linger), so that at a moderate load, where most appends find
// their partition idle, the appends of a millisecond share a request. One
// that finds all its partition's rounds in flight waits for one of them
// anyway, and never lingers.
type partRounds struct {
	inflight int
	queue    []queuedRecord
	// lingering is the generation of the pending linger's timer, 0 when
	// none is pending; a timer whose generation is no longer current
	// (its round started without it) does nothing.
	lingering uint64
	gen       uint64
	// started counts the partition's rounds, for the tests.
	started int
}

type queuedRecord struct {
	ctx     context.Context
	rec     *kgo.Record
	promise func(*kgo.Record, error)
}

// produceLocked hands recs, which partitions parts, to the producer or to
// their partitions' queues, in order. The caller holds stampMu, so the
// order in which records reach the producer is still the order of their
// stamps.
func (s *Store) produceLocked(ctx context.Context, parts []int32, recs []*kgo.Record, promises []func(*kgo.Record, error)) {
	if s.closed {
		for i, r := range recs {
			promises[i](r, kgo.ErrClientClosed)
		}
		return
	}
	if s.cfg.rounds <= 0 {
		for i, r := range recs {
			s.cl.Produce(ctx, r, promises[i])
		}
		return
	}
	for i, r := range recs {
		pr := s.rounds[parts[i]]
		if pr == nil {
			pr = &partRounds{}
			s.rounds[parts[i]] = pr
		}
		pr.queue = append(pr.queue, queuedRecord{ctx: ctx, rec: r, promise: promises[i]})
	}
	for i, p := range parts {
		if i > 0 && parts[i-1] == p {
			continue
		}
		pr := s.rounds[p]
		switch {
		case len(pr.queue) == 0 || pr.inflight >= s.cfg.rounds || pr.lingering != 0:
		case s.cfg.roundLinger <= 0:
			s.startRoundLocked(p, pr)
		default:
			s.lingerLocked(p, pr)
		}
	}
}

// lingerLocked starts p's round once RoundLinger has passed, unless it
// has started by then.
func (s *Store) lingerLocked(p int32, pr *partRounds) {
	pr.gen++
	gen := pr.gen
	pr.lingering = gen
	time.AfterFunc(s.cfg.roundLinger, func() {
		s.stampMu.Lock()
		defer s.stampMu.Unlock()
		if pr.lingering != gen {
			return
		}
		pr.lingering = 0
		if len(pr.queue) > 0 && pr.inflight < s.cfg.rounds && !s.closed {
			s.startRoundLocked(p, pr)
		}
	})
}

// startRoundLocked produces everything p's queue holds as one round.
func (s *Store) startRoundLocked(p int32, pr *partRounds) {
	round := pr.queue
	pr.queue = nil
	pr.lingering = 0
	pr.inflight++
	pr.started++
	var left atomic.Int32
	left.Store(int32(len(round)))
	for _, q := range round {
		s.cl.Produce(q.ctx, q.rec, func(r *kgo.Record, err error) {
			q.promise(r, err)
			if left.Add(-1) == 0 {
				// Not in the promise: franz-go calls promises one at a
				// time, and a Produce that waits for buffer space there
				// would wait for itself.
				go s.endRound(p)
			}
		})
	}
}

// endRound starts p's next round, if appends are waiting for one.
func (s *Store) endRound(p int32) {
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	pr := s.rounds[p]
	pr.inflight--
	if len(pr.queue) > 0 && !s.closed {
		s.startRoundLocked(p, pr)
	}
}

// failQueued fails every append still waiting for a round, and any that
// come after: the store is closing, and nothing would send them.
func (s *Store) failQueued() {
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	s.closed = true
	for _, pr := range s.rounds {
		for _, q := range pr.queue {
			q.promise(q.rec, kgo.ErrClientClosed)
		}
		pr.queue = nil
	}
}
