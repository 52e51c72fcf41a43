package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LostWork reports the work topic's partitions that lost items no worker
// had read: the workers' group committed an offset below where the
// partition now starts, or committed nothing on a partition that no longer
// starts at 0. The work topic keeps the brokers' retention, so workers
// stopped for longer than it (seven days by Kafka's default) come back to
// find items deleted, and a group that resumes there skips to the start.
// The documents of those items are still queued in the log and would stay
// queued. The result maps each such partition to where it now starts;
// items from there on are still to be read.
func (s *Store) LostWork(ctx context.Context) (map[int32]int64, error) {
	adm := kadm.NewClient(s.cl)
	topic := s.cfg.workTopic
	// A cluster's group coordinator may be moving or, on a new cluster,
	// not there yet: those are asked again until ctx ends.
	var starts kadm.ListedOffsets
	err := retry(ctx, kerr.IsRetriable, func() (err error) {
		if starts, err = adm.ListStartOffsets(ctx, topic); err == nil {
			err = starts.Error()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: list %s start offsets: %w", ErrUnavailable, topic, err)
	}
	var committed kadm.OffsetResponses
	err = retry(ctx, kerr.IsRetriable, func() (err error) {
		if committed, err = adm.FetchOffsets(ctx, s.GroupName("workers")); err == nil {
			err = committed.Error()
		}
		return err
	})
	if errors.Is(err, kerr.GroupIDNotFound) {
		// No worker ever joined (or the group's offsets expired).
		committed, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: fetch the workers' offsets: %w", ErrUnavailable, err)
	}
	n := s.WorkPartitions()
	lost := map[int32]int64{}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Partition >= n || o.Offset == 0 {
			return
		}
		at := int64(-1) // nothing committed
		if c, ok := committed.Lookup(topic, o.Partition); ok {
			at = c.At
		}
		if at < o.Offset {
			lost[o.Partition] = o.Offset
		}
	})
	return lost, nil
}

// WorkTopicReplaced reports whether the work topic was deleted and created
// again, as its layout records (an earlier topic id under the same name),
// and since when the current one has been there, by the clock of the node
// that first met it. Items dispatched before then went to the deleted
// topic, with every item no worker had read. Deleting and creating the
// topic again also deletes the workers' offsets on it and starts it at 0,
// so LostWork cannot see that.
func (s *Store) WorkTopicReplaced() (since time.Time, ok bool) {
	return s.workReplaced, !s.workReplaced.IsZero()
}

// WorkPartitions is the work topic's partition count as recorded in its
// layout: the partitions work items are appended to.
func (s *Store) WorkPartitions() int32 {
	if c := s.pinned.counts.Load(); c != nil {
		if n, ok := (*c)[s.cfg.workTopic]; ok {
			return n
		}
	}
	return s.partitions
}

// WorkPartitionFor is the work-topic partition of a document's items,
// with the hash AppendWork's producer uses.
func (s *Store) WorkPartitionFor(documentID string) int32 {
	p := kgo.StickyKeyPartitioner(nil).ForTopic(s.cfg.workTopic)
	return int32(p.Partition(&kgo.Record{Key: []byte(documentID)}, int(s.WorkPartitions())))
}
