package projections

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// Dispatcher runs the duties of the partitions this node owns in the duties
// group: it turns DocumentQueued into work items, and it records a job's
// outcome once its rows are terminal (the coordinator, coordinator.go). It runs
// only for the partitions this node owns in the duties group, and checks each
// event against the local view before dispatching: a document whose attempt
// was already claimed, canceled or superseded is skipped, so a hand-over
// re-reading uncommitted events re-dispatches only what is still waiting.
type Dispatcher struct {
	Store    *eventstore.Store
	Views    *Views
	Instance string // static group member id; "" for dynamic membership
	Log      zerolog.Logger

	mu    sync.Mutex
	owned map[int32]bool // partitions this node owns in the duties group
}

// Owned lists the partitions this node currently owns in the duties group;
// other duties (webhook delivery) act only on those.
func (d *Dispatcher) Owned() []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int32, 0, len(d.owned))
	for p := range d.owned {
		out = append(out, p)
	}
	return out
}

func (d *Dispatcher) setOwned(parts []int32, own bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.owned == nil {
		d.owned = map[int32]bool{}
	}
	for _, p := range parts {
		if own {
			d.owned[p] = true
		} else {
			delete(d.owned, p)
		}
	}
}

// Run dispatches until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	topic := d.Store.EventsTopic()
	// Offsets are marked once a poll is dispatched and committed in the
	// background, not synchronously before the next poll: that commit's
	// round trip sat in the dispatch hop of every document. A partition
	// moves only between polls (BlockRebalanceOnPoll), and its marks are
	// committed before it goes, so the next owner starts after everything
	// dispatched here; after a crash it re-reads at most the last
	// autocommit interval, which the checks against the views make harmless.
	revoked := func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
		d.Log.Info().Ints32("partitions", m[topic]).Msg("duties: partitions revoked")
		d.setOwned(m[topic], false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.CommitMarkedOffsets(ctx); err != nil {
			d.Log.Warn().Err(err).Msg("duties: commit on hand-over failed; the next owner re-reads since the last commit")
		}
	}
	g, err := d.Store.JoinGroup(d.Store.GroupName("duties"), topic, d.Instance, kgo.BlockRebalanceOnPoll(),
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			d.Log.Info().Ints32("partitions", m[topic]).Msg("duties: partitions assigned")
			d.setOwned(m[topic], true)
		}),
		kgo.OnPartitionsRevoked(revoked),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			d.Log.Warn().Ints32("partitions", m[topic]).Msg("duties: partitions lost")
			d.setOwned(m[topic], false)
		}))
	if err != nil {
		return err
	}
	defer g.Close()
	// Leaving the group is a rebalance too: it must not wait for a poll.
	defer g.Client().AllowRebalance()
	for {
		recs := g.Poll(ctx, 1024)
		if ctx.Err() != nil {
			return nil
		}
		// Rebalances wait until this poll's records are dispatched and
		// marked, so two owners never hold one partition's events.
		err := d.dispatch(ctx, g, recs)
		g.Client().AllowRebalance()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case eventstore.IsRetryable(err):
			// A broker is down or moving leaders: the duties must outlive
			// it. Offsets not committed now are covered by the next commit
			// (or re-read by the next owner), and every duty output is
			// idempotent.
			d.Log.Warn().Err(err).Msg("duties: kafka unavailable; continuing")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		default:
			return err
		}
	}
}

func (d *Dispatcher) dispatch(ctx context.Context, g *eventstore.Group, recs []*kgo.Record) error {
	var queued []*domain.DocumentQueued
	var events []eventstore.Record
	last := map[int32]eventstore.Position{}
	for _, raw := range recs {
		rec := g.Decode(raw)
		if rec.Err != nil {
			continue
		}
		events = append(events, rec)
		last[rec.Partition] = rec.Position
		if q, ok := rec.Event.(*domain.DocumentQueued); ok {
			queued = append(queued, q)
		}
	}
	// The duties read the views as of (at least) these events.
	for _, pos := range last {
		if err := d.Views.WaitFor(ctx, pos); err != nil {
			return err
		}
	}
	var items []eventstore.WorkItem
	for _, q := range queued {
		doc, err := d.Views.Document(q.Meta.OrgID, q.DocumentID)
		if err != nil || doc.Status != domain.StatusQueued || doc.Attempt != q.Attempt {
			continue
		}
		items = append(items, eventstore.WorkItem{
			ID: q.Meta.EventID, OrgID: doc.OrgID, DocumentID: doc.ID, Attempt: doc.Attempt,
			Phase: doc.Target, BlobKey: doc.BlobKey, FileName: doc.FileName, ContentType: doc.ContentType,
		})
	}
	for backoff := 100 * time.Millisecond; len(items) > 0; backoff = min(2*backoff, 5*time.Second) {
		err := d.Store.AppendWork(ctx, items...)
		if err == nil {
			break
		}
		d.Log.Warn().Err(err).Int("items", len(items)).Msg("dispatch failed; retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
	if err := d.coordinate(ctx, events); err != nil {
		return err
	}
	g.Client().MarkCommitRecords(recs...)
	return nil
}
