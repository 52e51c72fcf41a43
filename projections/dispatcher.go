package projections

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/docket/docket/eventstore"
)

// Dispatcher runs the duties of the partitions this node owns in the duties
// group: it turns DocumentQueued into work items, and it records a job's
// outcome once its rows are terminal (the coordinator, coordinator.go). It runs
// only for the partitions this node owns in the duties group, and checks each
// event against the local view before dispatching: a document whose attempt
// was already claimed, canceled or superseded is skipped, so a hand-over
// re-reading uncommitted events re-dispatches only what is still waiting.
//
// The group decides ownership and keeps the committed offsets; the records
// come from the views (dutyfeed.go), which have fetched and decoded them
// already. Fetching them a second time cost the broker a sixth of the
// requests of a document.
type Dispatcher struct {
	Store    *eventstore.Store
	Views    *Views
	Instance string // static group member id; "" for dynamic membership
	Log      zerolog.Logger
	// GroupOpts are appended to the options of the group member's client
	// (tests hook its requests). Default: none.
	GroupOpts []kgo.Opt
	// LostWorkCheck is how often the duties look for work items the work
	// topic deleted before a worker read them (lostwork.go). Default:
	// DefaultLostWorkCheck.
	LostWorkCheck time.Duration
	// OnRedispatch, when set, is called with the number of documents
	// dispatched again after their work items were lost (metrics count
	// them). Default: none.
	OnRedispatch func(documents int)

	mu    sync.Mutex
	owned map[int32]*duty // partitions this node owns in the duties group
	// running is held while a run of records is dispatched and its progress
	// recorded, and while progress is committed: a revoke waits for it, so
	// no dispatch of a partition outlives its ownership and the revoke's
	// commit is the last one.
	running sync.Mutex
	wake    chan struct{} // an assignment waits to be resolved
	// appended holds where the outcomes and follow-ups this node appended
	// (coordinate) landed, by id, until the views apply them; guarded by
	// running. A run that sees the job again before then would otherwise
	// append a duplicate under the same id (a recorded no-op, but noise
	// in the log). At most appendedMax, then it starts over; a new owner
	// after a hand-over starts empty.
	appended map[string]eventstore.Position

	buffer   int                                           // subscription buffer; 0: dutyBuffer (tests shrink it)
	received func([]eventstore.Record) []eventstore.Record // sees every live fetch first (tests)
	ticks    <-chan time.Time                              // when chores are due; nil: every second (tests drive it)
	ran      func(next map[int32]int64)                    // called after each run's progress is recorded (tests)
}

// duty is the progress of one owned partition.
type duty struct {
	// next is the next offset whose duties are not done; -1 until the
	// group's committed offset has been read.
	next int64
	// committed is the last next committed, or -1: commits are skipped
	// while nothing moved.
	committed int64
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

// Run dispatches until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	topic := d.Store.EventsTopic()
	d.mu.Lock()
	d.owned, d.wake = map[int32]*duty{}, make(chan struct{}, 1)
	d.mu.Unlock()
	// The member never polls, so nothing blocks a rebalance on a poll and
	// nothing is committed but what the loop commits.
	opts := append([]kgo.Opt{
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			// The group fetches the new partitions' offsets only after
			// this returns: pausing here too means it never fetches
			// records, whatever the timing of the pause after JoinGroup.
			cl.PauseFetchTopics(topic)
			d.Log.Info().Ints32("partitions", m[topic]).Msg("duties: partitions assigned")
			d.assign(m[topic])
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			d.Log.Info().Ints32("partitions", m[topic]).Msg("duties: partitions revoked")
			d.revoke(cl, topic, m[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			d.Log.Warn().Ints32("partitions", m[topic]).Msg("duties: partitions lost")
			d.drop(m[topic])
		}),
	}, d.GroupOpts...)
	g, err := d.Store.JoinGroup(d.Store.GroupName("duties"), topic, d.Instance, opts...)
	if err != nil {
		return err
	}
	g.Client().PauseFetchTopics(topic)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		d.watchLostWork(watchCtx)
	}()
	defer func() {
		stopWatch()
		<-watched
	}()
	// Leaving the group revokes every partition, which commits their
	// progress: the loop has returned by then.
	defer g.Close()
	return d.loop(ctx, g.Client())
}

// assign owns parts from now on; the loop reads where they start.
// Partitions added to the event topic after its layout was recorded hold
// no events (eventstore's layout.go) and have no duties: the group still
// assigns them, and they are left alone.
func (d *Dispatcher) assign(parts []int32) {
	d.mu.Lock()
	for _, p := range parts {
		if p >= d.Store.Partitions() {
			continue
		}
		if d.owned[p] == nil {
			d.owned[p] = &duty{next: -1, committed: -1}
		}
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// revoke gives parts up and commits where their duties stopped, so the
// next owner starts exactly there.
func (d *Dispatcher) revoke(cl *kgo.Client, topic string, parts []int32) {
	offsets := map[int32]kgo.EpochOffset{}
	for p, next := range d.drop(parts) {
		offsets[p] = kgo.EpochOffset{Epoch: -1, Offset: next}
	}
	if len(offsets) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: offsets}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err = commitErr(resp, err); err != nil {
			d.Log.Warn().Err(err).Msg("duties: commit on hand-over failed; the next owner re-reads since the last commit")
		}
	})
}

// drop gives parts up once no run of their records is being dispatched,
// and returns the known next offsets of those it owned.
func (d *Dispatcher) drop(parts []int32) map[int32]int64 {
	if len(parts) == 0 {
		return nil
	}
	d.running.Lock()
	defer d.running.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	next := map[int32]int64{}
	for _, p := range parts {
		if st := d.owned[p]; st != nil && st.next >= 0 {
			next[p] = st.next
		}
		delete(d.owned, p)
	}
	return next
}

// commit commits, in the background, the progress of the owned partitions
// that moved since their last commit. It holds running until the commit is
// issued: an offset read before a revoke must not be committed after the
// revoke's own commit, over the next owner's.
func (d *Dispatcher) commit(cl *kgo.Client, topic string) {
	d.running.Lock()
	defer d.running.Unlock()
	offsets := map[int32]kgo.EpochOffset{}
	sent := map[*duty]int64{}
	d.mu.Lock()
	for p, st := range d.owned {
		if st.next >= 0 && st.next != st.committed {
			offsets[p] = kgo.EpochOffset{Epoch: -1, Offset: st.next}
			st.committed, sent[st] = st.next, st.next
		}
	}
	d.mu.Unlock()
	if len(offsets) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cl.CommitOffsets(ctx, map[string]map[int32]kgo.EpochOffset{topic: offsets}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cancel()
		if err = commitErr(resp, err); err == nil {
			return
		}
		d.Log.Debug().Err(err).Msg("duties: commit failed; retrying with the next")
		d.mu.Lock()
		defer d.mu.Unlock()
		for st, at := range sent {
			if st.committed == at {
				st.committed = -1
			}
		}
	})
}

// commitErr is a commit's error, or the first of its partitions'.
func commitErr(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil || resp == nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}
