package eventstore

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Group is a consumer-group member on one topic, for the duties (which need
// partition ownership) and the workers (which need load sharing). Callers
// pass kgo.DisableAutoCommit or kgo.AutoCommitMarks, so that offsets are
// committed only after their work is done.
type Group struct {
	cl    *kgo.Client
	codec *Codec
}

// JoinGroup joins group on topic. instance, when set, is a static member id:
// a restarted node takes its partitions back at once instead of waiting for
// its old session to expire. A new group starts at the log's beginning.
func (s *Store) JoinGroup(group, topic, instance string, opts ...kgo.Opt) (*Group, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(s.seeds...),
		kgo.ClientID(s.cfg.clientID + "-" + group),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}
	if instance != "" {
		base = append(base, kgo.InstanceID(instance))
	}
	base = append(base, s.cfg.hookOpts()...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: join %s: %w", group, err)
	}
	return &Group{cl: cl, codec: s.codec}, nil
}

// Poll returns the next records, or nil when ctx ends.
func (g *Group) Poll(ctx context.Context, max int) []*kgo.Record {
	fs := g.cl.PollRecords(ctx, max)
	if ctx.Err() != nil {
		return nil
	}
	return fs.Records()
}

// Decode decodes an event record.
func (g *Group) Decode(rec *kgo.Record) Record {
	ev, err := g.codec.Decode(rec.Value)
	return Record{Position: Position{rec.Partition, rec.Offset}, Timestamp: rec.Timestamp, Event: ev, Err: err}
}

// Commit commits the given records' offsets synchronously.
func (g *Group) Commit(ctx context.Context, recs ...*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := g.cl.CommitRecords(ctx, recs...); err != nil {
		return fmt.Errorf("%w: commit: %w", ErrUnavailable, err)
	}
	return nil
}

// Client exposes the member's client (for marks and rebalance control).
func (g *Group) Client() *kgo.Client { return g.cl }

// Close leaves the group.
func (g *Group) Close() { g.cl.Close() }
