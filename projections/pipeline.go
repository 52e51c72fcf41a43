package projections

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/eventstore"
)

// Pipeline applies fetches in order, folding each while the one before it
// commits on a goroutine of its own. Committing is encoding the views the
// fetch changed, writing its history (the events' copies and index), and
// Pebble inserting the batch into its memtable, a third of the apply
// goroutine's time on full fetches before it moved (BENCHMARKS.md, items
// 38–40); with two cores the next fetch's fold need not wait for it.
//
// While a fetch commits, the next one reads what it wrote from its maps
// (Tx.written, fetchObjects; the apply goroutine's caches already hold the
// rest), and waits for the commit before anything that would read Pebble
// for a key those maps do not track: an iteration, an untracked family,
// an org's endpoints it wrote. Commits keep the log's order, one at a
// time, so a crash keeps a prefix of the fetches, each whole with its
// offsets, as with ApplyRecords.
//
// A Pipeline belongs to the apply goroutine; the zero value is not usable
// (Views.Pipeline).
type Pipeline struct {
	v        *Views
	inflight *staged
}

// Pipeline returns a pipeline over v. Only one may apply at a time, and not
// alongside ApplyRecords or Run.
func (v *Views) Pipeline() *Pipeline { return &Pipeline{v: v} }

// Apply folds recs, waits for the previous fetch's commit, and starts this
// one's. Records at offsets already applied or folded are skipped; with
// nothing left to fold, Apply only waits (so Run, which stops at given
// offsets, sees them reached). After an error nothing is in flight, and
// nothing of recs was committed.
func (p *Pipeline) Apply(recs []eventstore.Record) error {
	s, err := p.v.fold(recs, p.inflight)
	if err != nil {
		p.Flush() // the fold's error is the one to report
		return err
	}
	if err := p.Flush(); err != nil {
		if s != nil {
			s.fb.close()
		}
		return err
	}
	if s != nil {
		s.done = make(chan struct{})
		if p.v.holdCommits {
			s.gate = make(chan struct{})
		}
		p.inflight = s
		go func() {
			defer close(s.done)
			s.err = p.v.commit(s)
		}()
	}
	return nil
}

// Flush waits for the fetch in flight, if any, to commit: after it, every
// fetch given to Apply is committed and its listeners called. A failed
// commit leaves the apply goroutine's caches empty (forget).
func (p *Pipeline) Flush() error {
	s := p.inflight
	if s == nil {
		return nil
	}
	p.inflight = nil
	s.release()
	if err := s.wait(); err != nil {
		p.v.forget()
		return err
	}
	p.v.batchHint = min(s.batchLen, maxBatchHint)
	return nil
}

// staged is a folded fetch, its batches ready to commit, with what the next
// fold reads of it until they have.
type staged struct {
	fb      *fetchBatch
	applied []eventstore.Record
	next    map[int32]int64 // the offsets once it commits
	touched map[int32]bool
	// written, objects and endpointsWritten are the fold's (Tx): what the
	// next fold reads before this fetch's commit has made it Pebble's.
	written          map[string][]byte
	objects          fetchObjects
	endpointsWritten map[string]bool
	due              map[int32]int64
	// dirty and history are what commit writes into the batch before it
	// commits it: the views the fetch changed, still decoded, and the
	// entities its events shaped (the history's copies and index).
	dirty   []dirtyView
	history *historyLog
	// batchLen is the batch's size once written, for the next fetches'
	// (Views.batchHint).
	batchLen int

	done chan struct{} // closed when commit returned; nil: not started
	err  error
	// gate holds the commit until the next fold is done or waits for it
	// (release), so that tests see a fold run against an uncommitted
	// fetch every time (Views.holdCommits); nil otherwise.
	gate     chan struct{}
	released bool
}

// release lets a held commit go. The apply goroutine's.
func (s *staged) release() {
	if s != nil && s.gate != nil && !s.released {
		s.released = true
		close(s.gate)
	}
}

// wait returns once the fetch committed, or failed to.
func (s *staged) wait() error {
	if s.done == nil {
		return nil
	}
	<-s.done
	return s.err
}

// commit commits a folded fetch and publishes it: the offsets, the waiters,
// the listeners. It may run on a goroutine other than the apply
// goroutine's, so it touches none of the state that goroutine keeps.
func (v *Views) commit(s *staged) error {
	defer s.fb.close()
	if s.gate != nil {
		<-s.gate
	}
	if v.failCommit != nil {
		if err := v.failCommit(); err != nil {
			return err
		}
	}
	b := s.fb.b
	if err := writeViews(b, s.dirty); err != nil {
		return err
	}
	if err := s.history.write(v.db, s.applied, b); err != nil {
		return err
	}
	s.batchLen = b.Len()
	// No fsync: the log is the source of truth, and offsets commit with the
	// views they describe, so a lost tail is simply applied again.
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("projections: commit: %w", err)
	}
	v.due.note(s.due)
	// Before the waiters are released: a request that waited for a key's
	// revocation must not authenticate with the key cached before it.
	v.keys.applied(s.applied)
	v.mu.Lock()
	for p := range s.touched {
		v.applied[p] = s.next[p]
	}
	close(v.changed)
	v.changed = make(chan struct{})
	v.mu.Unlock()
	for _, fn := range v.listeners {
		fn(s.applied)
	}
	v.notifySubscribers(s.applied)
	return nil
}

// forget empties the caches a fold filled for a fetch that then failed to
// commit (fold leaves them as they would be after it).
func (v *Views) forget() {
	v.cache.reset()
	v.counts = phaseCounts{}
}
