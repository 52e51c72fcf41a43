package eventstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultLayoutTopic holds the partition counts docket keeps for its
// topics unless Prefix or LayoutTopic says otherwise.
const DefaultLayoutTopic = "docket.layout"

// The layout is the partition count of the event and work topics as docket
// first met them, recorded once, in a topic of its own, and used for as
// long as the topic lives.
//
// Why: one org's events must stay in one partition (DESIGN invariant 1),
// and which one is a hash of the org over the partition count. Kafka lets
// an operator add partitions to a topic at any time; a client that hashed
// over the new count would send an org's next events to another partition.
// Its history would then be split over two partitions, which no fold can
// put back in order, and a node that read only the partitions it found at
// start would never see its own appends. So every node hashes over the
// recorded count, whatever the topic has now; added partitions stay empty.
//
// Why a topic: Kafka refuses topic configurations it does not know, and a
// record in the event topic itself would be a record that is not an event
// for every downstream consumer. The layout topic has one partition and
// keeps its records forever (retention.ms -1); the first record of a topic
// wins, so nodes that start together agree whoever wrote first. A record
// names the topic's id, so a topic that was deleted and created again
// gets a layout of its own.

// layoutRecord is the value of a layout record, keyed by the topic's name.
type layoutRecord struct {
	TopicID    string `json:"topic_id"`
	Partitions int32  `json:"partitions"`
}

// topicIDString is a topic id as Kafka's tools print it (kafka-topics.sh
// --describe: unpadded URL-safe base64), "" for none.
func topicIDString(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// topicFound is a topic as the brokers describe it now.
type topicFound struct {
	id         string
	partitions int32
}

// pinnedPartitioner hashes keyed records as franz-go's default (Kafka's
// murmur2 of the key), over the recorded partition count of the topics it
// has one for, and over the topic's current count for the others (the
// layout topic).
type pinnedPartitioner struct {
	counts atomic.Pointer[map[string]int32]
}

func (pp *pinnedPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return pinnedTopic{inner: kgo.StickyKeyPartitioner(nil).ForTopic(topic), pp: pp, topic: topic}
}

type pinnedTopic struct {
	inner kgo.TopicPartitioner
	pp    *pinnedPartitioner
	topic string
}

func (t pinnedTopic) RequiresConsistency(r *kgo.Record) bool { return t.inner.RequiresConsistency(r) }

func (t pinnedTopic) Partition(r *kgo.Record, n int) int {
	if c := t.pp.counts.Load(); c != nil {
		if pinned, ok := (*c)[t.topic]; ok && int(pinned) <= n {
			n = int(pinned)
		}
	}
	return t.inner.Partition(r, n)
}

// pinLayout finds, or records, the layout of the event and work topics,
// and makes the producer hash over it. found is what the brokers describe
// now. A ReadOnly store records nothing: without a layout it uses the
// topics as they are.
func (s *Store) pinLayout(ctx context.Context, adm *kadm.Client, found map[string]topicFound) (map[string]int32, error) {
	recorded, end, err := s.readLayout(ctx, adm, 0)
	if err != nil {
		return nil, err
	}
	var missing []*kgo.Record
	for topic, f := range found {
		if _, ok := recorded[layoutKey{topic, f.id}]; ok || s.cfg.noCreate {
			continue
		}
		v, err := json.Marshal(layoutRecord{TopicID: f.id, Partitions: f.partitions})
		if err != nil {
			return nil, fmt.Errorf("eventstore: layout: %w", err)
		}
		missing = append(missing, &kgo.Record{Topic: s.cfg.layoutTopic, Key: []byte(topic), Value: v})
	}
	if len(missing) > 0 {
		if err := s.produceNow(ctx, missing); err != nil {
			return nil, fmt.Errorf("%w: record the layout in %s: %w", ErrUnavailable, s.cfg.layoutTopic, err)
		}
		// Another node may have recorded a layout first: read on, from
		// where the first read ended, and the earliest record wins.
		more, _, err := s.readLayout(ctx, adm, end)
		if err != nil {
			return nil, err
		}
		for k, v := range more {
			if _, ok := recorded[k]; !ok {
				recorded[k] = v
			}
		}
	}
	counts := make(map[string]int32, len(found))
	for topic, f := range found {
		e, ok := recorded[layoutKey{topic, f.id}]
		n := e.partitions
		switch {
		case !ok:
			n = f.partitions // ReadOnly, and nothing recorded
		case n > f.partitions:
			return nil, fmt.Errorf("%w: %s has %d partitions, fewer than the %d recorded in %s", ErrLayout, topic, f.partitions, n, s.cfg.layoutTopic)
		case n < f.partitions:
			s.cfg.log.Warn().Str("topic", topic).Int32("partitions", f.partitions).Int32("used", n).
				Msg("partitions were added to the topic after docket recorded its layout; they are not used: every key stays in the partition it hashes to over the recorded count")
		}
		counts[topic] = n
	}
	s.pinned.counts.Store(&counts)
	s.workReplaced = replacedAt(recorded, s.cfg.workTopic, found[s.cfg.workTopic].id)
	return counts, nil
}

// replacedAt is when the layout of topic's current incarnation (id) was
// recorded, if the layout holds an earlier one under the same name: the
// topic was deleted and created again, taking its records with it. Zero
// otherwise.
func replacedAt(recorded map[layoutKey]layoutEntry, topic, id string) time.Time {
	cur, ok := recorded[layoutKey{topic, id}]
	if !ok {
		return time.Time{}
	}
	for k, e := range recorded {
		if k.topic == topic && k.id != id && e.offset < cur.offset {
			return cur.at
		}
	}
	return time.Time{}
}

// produceNow produces recs and waits for them, without the producer's
// linger: Open should not wait for it.
func (s *Store) produceNow(ctx context.Context, recs []*kgo.Record) error {
	var wg sync.WaitGroup
	errs := make([]error, len(recs))
	for i, r := range recs {
		wg.Add(1)
		s.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	if err := s.cl.Flush(ctx); err != nil {
		return err
	}
	wg.Wait()
	return errors.Join(errs...)
}

// layoutKey names a topic's layout: a topic deleted and created again
// under the same name is another topic.
type layoutKey struct{ topic, id string }

// layoutEntry is the first layout recorded for a topic: its partition
// count, when it was recorded (about when docket first met the topic, by
// the clock of the node that did), and where: the layout topic's one
// partition orders records whatever the nodes' clocks say.
type layoutEntry struct {
	partitions int32
	at         time.Time
	offset     int64
}

// readLayout reads the layout topic from offset from to its end, and
// returns the first layout recorded for each topic and where it stopped.
// A missing layout topic (a ReadOnly store of a deployment that has none)
// reads as empty.
func (s *Store) readLayout(ctx context.Context, adm *kadm.Client, from int64) (map[layoutKey]layoutEntry, int64, error) {
	out := map[layoutKey]layoutEntry{}
	var end int64
	// A topic just created reaches a cluster's brokers one by one: until
	// then it is unknown, unless a ReadOnly store finds none at all. Kafka
	// counts an unknown topic as retriable, so it is decided before
	// IsRetriable: a ReadOnly store of a log without layouts waited out its
	// whole context here (30 s for `docket events`).
	again := func(err error) bool {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return !s.cfg.noCreate
		}
		return kerr.IsRetriable(err)
	}
	err := retry(ctx, again, func() error {
		listed, err := adm.ListEndOffsets(ctx, s.cfg.layoutTopic)
		if err != nil {
			return err
		}
		o, ok := listed.Lookup(s.cfg.layoutTopic, 0)
		if !ok {
			return kerr.UnknownTopicOrPartition
		}
		end = o.Offset
		return o.Err
	})
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition) && s.cfg.noCreate:
		return out, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("%w: read %s: %w", ErrUnavailable, s.cfg.layoutTopic, err)
	}
	if end <= from {
		return out, end, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(s.seeds...),
		kgo.ClientID(s.cfg.clientID + "-layout"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.layoutTopic: {0: kgo.NewOffset().At(from)}}),
	}, s.cfg.hookOpts()...)...)
	if err != nil {
		return nil, 0, fmt.Errorf("eventstore: layout reader: %w", err)
	}
	defer cl.Close()
	for next := from; next < end; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("%w: read %s: %w", ErrUnavailable, s.cfg.layoutTopic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			var v layoutRecord
			if json.Unmarshal(r.Value, &v) != nil || v.Partitions < 1 {
				s.cfg.log.Warn().Int64("offset", r.Offset).Msg("eventstore: unreadable layout record skipped")
				return
			}
			k := layoutKey{string(r.Key), v.TopicID}
			if _, ok := out[k]; !ok {
				out[k] = layoutEntry{v.Partitions, r.Timestamp, r.Offset}
			}
		})
	}
	return out, end, nil
}
