package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/docket/docket/domain"
)

// TypeHeader is the Kafka record header that names the event type, so that
// consumers can route records without decoding them.
const TypeHeader = "docket-type"

// Position is where a record sits in the log.
type Position struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// Store appends events and work items. Its producer is idempotent with
// acks=all, so an acknowledged append survives the loss of any broker that
// min.insync.replicas allows, and retries never duplicate a record.
type Store struct {
	cfg        config
	seeds      []string
	cl         *kgo.Client
	codec      *Codec
	partitions int32 // the event topic's, as recorded in its layout
	topicID    string
	pinned     *pinnedPartitioner
	// workReplaced is when the current work topic was first met, if an
	// earlier work topic of the same name was deleted (WorkTopicReplaced).
	workReplaced time.Time

	// stampMu orders appends: it is held from the occurred_at check to
	// the Produce calls, so the order of stamps is the order in which
	// records enter the producer's per-partition buffers, which is log
	// order. lastStamp is the latest occurred_at handed to each partition.
	// stampPart is PartitionFor's hash, kept (under stampMu) so that the
	// check costs no allocations per event.
	stampMu   sync.Mutex
	lastStamp map[int32]time.Time
	stampPart kgo.TopicPartitioner
	// rounds are each partition's appends in flight and waiting
	// (rounds.go), and closed is set by Close; both under stampMu.
	rounds map[int32]*partRounds
	closed bool
}

// Open connects to the brokers, creates the topics if missing and learns the
// partition counts it hashes keys over: those recorded in the layout topic
// when docket first met the topics (layout.go), recorded now if missing.
func Open(ctx context.Context, seeds []string, opts ...Opt) (*Store, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxRecord < minRecordBytes {
		return nil, fmt.Errorf("%w: MaxRecordBytes %d is below %d", ErrInvalidOption, cfg.maxRecord, minRecordBytes)
	}
	if cfg.linger < 0 {
		return nil, fmt.Errorf("%w: Linger %s is negative", ErrInvalidOption, cfg.linger)
	}
	if cfg.rounds < 0 {
		return nil, fmt.Errorf("%w: AppendRounds %d is negative", ErrInvalidOption, cfg.rounds)
	}
	if cfg.roundLinger < 0 {
		return nil, fmt.Errorf("%w: RoundLinger %s is negative", ErrInvalidOption, cfg.roundLinger)
	}
	if cfg.linger > 0 {
		cfg.rounds = 0
	}
	if cfg.deliveryTimeout < 0 {
		return nil, fmt.Errorf("%w: DeliveryTimeout %s is negative", ErrInvalidOption, cfg.deliveryTimeout)
	}
	codec, err := NewCodec()
	if err != nil {
		return nil, err
	}
	if cfg.registry != "" {
		rc, err := sr.NewClient(sr.URLs(cfg.registry))
		if err != nil {
			return nil, fmt.Errorf("eventstore: schema registry: %w", err)
		}
		if codec, err = codec.WithRegistry(ctx, rc, cfg.eventsTopic); err != nil {
			return nil, err
		}
	}
	// The partitioner learns the recorded partition counts once Open has
	// read them (layout.go), before anything but the layout is produced.
	pinned := &pinnedPartitioner{}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(cfg.clientID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(cfg.linger),
		kgo.ProducerBatchMaxBytes(cfg.maxRecord),
		kgo.RecordPartitioner(pinned),
		kgo.ProduceRequestTimeout(10 * time.Second),
		kgo.RecordDeliveryTimeout(cfg.deliveryTimeout),
		kgo.RequestRetries(cfg.retries),
	}, cfg.hookOpts()...)...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: client: %w", err)
	}
	s := &Store{cfg: cfg, seeds: seeds, cl: cl, codec: codec, lastStamp: map[int32]time.Time{}, pinned: pinned, rounds: map[int32]*partRounds{}}
	if err := s.ensureTopics(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) ensureTopics(ctx context.Context) error {
	adm := kadm.NewClient(s.cl)
	maxMsg := strconv.Itoa(int(s.cfg.maxRecord))
	configs := map[string]*string{"max.message.bytes": &maxMsg}
	if s.cfg.minISR > 0 {
		v := strconv.Itoa(s.cfg.minISR)
		configs["min.insync.replicas"] = &v
	}
	for _, t := range []string{s.cfg.eventsTopic, s.cfg.workTopic, s.cfg.layoutTopic} {
		if s.cfg.noCreate {
			break
		}
		// The event log and the layout keep every record (topicconfig.go,
		// layout.go); the layout has one partition, which orders it.
		partitions, topicConfigs := s.cfg.partitions, configs
		switch t {
		case s.cfg.eventsTopic:
			topicConfigs = keptForever(configs)
		case s.cfg.layoutTopic:
			partitions, topicConfigs = 1, keptForever(configs)
		}
		resp, err := adm.CreateTopic(ctx, partitions, s.cfg.replication, topicConfigs, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("%w: create %s: %w", ErrUnavailable, t, err)
		}
	}
	// Wait until metadata shows the topics with leaders, so the first
	// append after start-up does not race topic creation.
	for {
		md, err := adm.Metadata(ctx, s.cfg.eventsTopic, s.cfg.workTopic)
		if td, ok := md.Topics[s.cfg.eventsTopic]; err == nil && ok && s.cfg.noCreate && errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("%w: %s", ErrNoTopic, s.cfg.eventsTopic)
		}
		if err == nil {
			found := map[string]topicFound{}
			ready := true
			for _, t := range []string{s.cfg.eventsTopic, s.cfg.workTopic} {
				td, ok := md.Topics[t]
				if s.cfg.noCreate && t == s.cfg.workTopic && (!ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition)) {
					continue // a tool that reads the log needs no work topic
				}
				if !ok || td.Err != nil || len(td.Partitions) == 0 {
					ready = false
					break
				}
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ready = false
					}
				}
				found[t] = topicFound{id: topicIDString(td.ID), partitions: int32(len(td.Partitions))}
			}
			if ready {
				counts, err := s.pinLayout(ctx, adm, found)
				if err != nil {
					return err
				}
				s.partitions = counts[s.cfg.eventsTopic]
				s.topicID = found[s.cfg.eventsTopic].id
				s.checkTopicConfig(ctx, adm)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: topic %s not ready: %w", ErrUnavailable, s.cfg.eventsTopic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// minRecordBytes is the smallest MaxRecordBytes Open accepts: below it,
// ordinary events (a batch summary, a webhook's notification) would fail.
const minRecordBytes = 64 << 10

// Partitions is the event topic's partition count as recorded in its
// layout: the partitions docket writes and reads. Partitions added to the
// topic later are not used.
func (s *Store) Partitions() int32 { return s.partitions }

// Seeds are the brokers the store was opened with.
func (s *Store) Seeds() []string { return s.seeds }

// EventsTopic is the event log topic.
func (s *Store) EventsTopic() string { return s.cfg.eventsTopic }

// EventsTopicID is the id Kafka gave the event topic when it was created,
// which a topic deleted and created again under the same name does not
// share ("" from brokers without topic ids).
func (s *Store) EventsTopicID() string { return s.topicID }

// WorkTopic is the work topic.
func (s *Store) WorkTopic() string { return s.cfg.workTopic }

// GroupName is the consumer group for role ("duties", "workers"), under the
// store's prefix.
func (s *Store) GroupName(role string) string { return s.cfg.prefix + "-" + role }

// Codec is the store's Avro codec.
func (s *Store) Codec() *Codec { return s.codec }

// Client exposes the underlying client for admin use (tests, readiness).
func (s *Store) Client() *kgo.Client { return s.cl }

// Close closes the producer. Appends not yet acknowledged fail
// (ErrUnavailable): those still queued for a round (rounds.go) never
// reached the broker; of those franz-go held, whether the broker got them
// is unknown, as for any append that fails.
func (s *Store) Close() {
	s.failQueued()
	s.cl.Close()
}

// Append writes events keyed by their org id and waits for acks=all. Events
// of one call that share an org land in one partition in the given order.
// It returns each event's position.
func (s *Store) Append(ctx context.Context, events ...domain.Event) ([]Position, error) {
	return s.AppendAsync(ctx, events...)()
}

// AppendAsync starts an append and returns a function that waits for it.
// Appends of one org started later land after this one (the producer is
// idempotent and keeps per-partition order), so a caller may start the next
// append before waiting for this one.
//
// Within a partition, meta.occurred_at never goes backwards in log order: an
// event stamped before the latest one this store handed to its partition
// (two goroutines stamp, the later stamp wins the race to the producer) is
// restamped with that latest time. Time travel (as_of) reads a prefix of
// the log by occurred_at, so without this a batch asked for "as of its
// completed_at" could stop short of the very event that completed it.
// Appends from other processes carry their own clocks; see
// projections.Views.At.
func (s *Store) AppendAsync(ctx context.Context, events ...domain.Event) func() ([]Position, error) {
	recs := make([]*kgo.Record, len(events))
	for i, e := range events {
		b, err := s.codec.Encode(e)
		if err != nil {
			return func() ([]Position, error) { return nil, err }
		}
		recs[i] = &kgo.Record{
			Topic:   s.cfg.eventsTopic,
			Key:     []byte(e.Header().OrgID),
			Value:   b,
			Headers: []kgo.RecordHeader{{Key: TypeHeader, Value: []byte(e.Type())}},
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(recs))
	promises := make([]func(*kgo.Record, error), len(recs))
	for i := range recs {
		promises[i] = func(_ *kgo.Record, err error) {
			errs[i] = err
			wg.Done()
		}
	}
	parts := make([]int32, len(recs))
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	// franz-go counts a record's delivery timeout from its timestamp, and
	// gives a record without one the time of Produce. An append queued for
	// a round (rounds.go) would then get a whole DeliveryTimeout again when
	// its round starts, up to twice it in all, and readers would see the
	// round's start as the time it was appended. Taken under stampMu, the
	// timestamps follow the partition's order, as occurred_at does.
	now := time.Now()
	for _, r := range recs {
		r.Timestamp = now
	}
	if err := s.keepStampsMonotonic(events, recs, parts); err != nil {
		return func() ([]Position, error) { return nil, err }
	}
	wg.Add(len(recs))
	s.produceLocked(ctx, parts, recs, promises)
	return func() ([]Position, error) {
		wg.Wait()
		// Records carry their own partition and offset once acknowledged;
		// promises may complete out of order across partitions.
		pos := make([]Position, len(recs))
		for i, r := range recs {
			if errs[i] != nil {
				return nil, appendError(events[i].Type(), errs[i])
			}
			pos[i] = Position{Partition: r.Partition, Offset: r.Offset}
		}
		for _, e := range events {
			if s.cfg.onAppend != nil {
				s.cfg.onAppend(e.Type())
			}
		}
		return pos, nil
	}
}

// keepStampsMonotonic restamps (and re-encodes) the events that would
// put occurred_at backwards in their partition, and records the latest
// stamps, and sets each record's partition in parts. The caller holds
// stampMu. Encoding twice is the rare path: it needs two appends to one
// partition racing within the clock's resolution.
func (s *Store) keepStampsMonotonic(events []domain.Event, recs []*kgo.Record, parts []int32) error {
	for i, e := range events {
		m := e.Header()
		if s.stampPart == nil {
			s.stampPart = kgo.StickyKeyPartitioner(nil).ForTopic(s.cfg.eventsTopic)
		}
		p := int32(s.stampPart.Partition(recs[i], int(s.partitions)))
		parts[i] = p
		if last := s.lastStamp[p]; m.OccurredAt.Before(last) {
			m.OccurredAt = last
			b, err := s.codec.Encode(e)
			if err != nil {
				return err
			}
			recs[i].Value = b
			continue
		}
		s.lastStamp[p] = m.OccurredAt
	}
	return nil
}

// AppendWork writes work items to the work topic, keyed by document id.
func (s *Store) AppendWork(ctx context.Context, items ...WorkItem) error {
	recs := make([]*kgo.Record, len(items))
	for i, it := range items {
		b, err := it.Marshal()
		if err != nil {
			return err
		}
		recs[i] = &kgo.Record{Topic: s.cfg.workTopic, Key: []byte(it.DocumentID), Value: b}
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("%w: append work: %w", ErrUnavailable, err)
	}
	return nil
}

// EndOffsets returns the next offset to be written in every event partition
// docket uses (Partitions).
// A partition whose leader is moving (NOT_LEADER_FOR_PARTITION and the
// other errors Kafka calls retriable, common right after the topics are
// created on a cluster) is asked again, with a backoff from 50 ms to 1 s,
// until ctx ends; then the error is ErrUnavailable.
func (s *Store) EndOffsets(ctx context.Context) (map[int32]int64, error) {
	return s.listOffsets(ctx, false)
}

// StartOffsets returns the first offset the log still holds in every event
// partition docket uses: above 0 only if records were deleted (a retention
// the topic should not have, or DeleteRecords). It retries as EndOffsets.
func (s *Store) StartOffsets(ctx context.Context) (map[int32]int64, error) {
	return s.listOffsets(ctx, true)
}

func (s *Store) listOffsets(ctx context.Context, start bool) (out map[int32]int64, err error) {
	err = retry(ctx, kerr.IsRetriable, func() error {
		out, err = s.listOffsetsOnce(ctx, start)
		return err
	})
	return out, err
}

// retry calls fn until it returns nil or an error that again does not
// accept, or ctx ends, waiting 50 ms after the first failure and twice as
// long after each next, up to a second. It returns fn's last error.
func retry(ctx context.Context, again func(error) bool, fn func() error) error {
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		err := fn()
		if err == nil || !again(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
	}
}

func (s *Store) listOffsetsOnce(ctx context.Context, start bool) (map[int32]int64, error) {
	list := kadm.NewClient(s.cl).ListEndOffsets
	if start {
		list = kadm.NewClient(s.cl).ListStartOffsets
	}
	listed, err := list(ctx, s.cfg.eventsTopic)
	if err != nil {
		return nil, fmt.Errorf("%w: list offsets: %w", ErrUnavailable, err)
	}
	out := make(map[int32]int64, s.partitions)
	var firstErr error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && firstErr == nil {
			firstErr = o.Err
		}
		if o.Partition < s.partitions {
			out[o.Partition] = o.Offset
		}
	})
	if firstErr != nil {
		return nil, fmt.Errorf("%w: list offsets: %w", ErrUnavailable, firstErr)
	}
	return out, nil
}

// PartitionFor returns the partition an org's events land in, with the same
// hash the producer uses (Kafka's murmur2 of the key, over Partitions).
func (s *Store) PartitionFor(orgID string) int32 {
	p := kgo.StickyKeyPartitioner(nil).ForTopic(s.cfg.eventsTopic)
	return int32(p.Partition(&kgo.Record{Key: []byte(orgID)}, int(s.partitions)))
}

// appendError classifies a failed produce: a record larger than a message
// may be (franz-go's ProducerBatchMaxBytes, about 1 MB, or the topic's
// max.message.bytes) fails the same way however often it is sent, so it is
// ErrTooLarge; anything else the broker may accept later.
func appendError(eventType string, err error) error {
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		return fmt.Errorf("%w: append %s: %w", ErrTooLarge, eventType, err)
	}
	return fmt.Errorf("%w: append %s: %w", ErrUnavailable, eventType, err)
}
