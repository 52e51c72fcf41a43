package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
)

// Record is one decoded event with its place in the log.
type Record struct {
	Position
	Timestamp time.Time
	Event     domain.Event
	// Err is set when the value could not be decoded (for example an event
	// written by a newer schema this node does not know). Every node meets
	// the same bytes, so skipping it keeps folds identical.
	Err error
	// Value is the record's bytes as read, so a consumer that keeps the
	// event (the history index) can store them instead of encoding it
	// again. Nil for records made in memory.
	Value []byte
}

// Reader consumes chosen partitions of the event topic from chosen offsets,
// without a consumer group: projections keep their own offsets.
type Reader struct {
	cl    *kgo.Client
	codec *Codec
}

// NewReader starts reading the event topic at the given next offsets, one per
// partition; partitions not in the map are not read.
func (s *Store) NewReader(from map[int32]int64, opts ...kgo.Opt) (*Reader, error) {
	parts := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		parts[p] = kgo.NewOffset().At(o)
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(s.seeds...),
		kgo.ClientID(s.cfg.clientID + "-reader"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.eventsTopic: parts}),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Never move on silently from an offset the log no longer holds
		// (franz-go would restart the partition at its start): a fold
		// that skipped events would be wrong. Poll returns
		// ErrLogTruncated instead.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	}
	base = append(base, s.cfg.hookOpts()...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: reader: %w", err)
	}
	return &Reader{cl: cl, codec: s.codec}, nil
}

// Poll blocks until records arrive or ctx ends. It returns at most max
// records (max <= 0: no bound), in log order within each partition.
func (r *Reader) Poll(ctx context.Context, max int) ([]Record, error) {
	fs := r.cl.PollRecords(ctx, max)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Record
	var fetchErr error
	fs.EachError(func(_ string, _ int32, err error) {
		if fetchErr == nil {
			fetchErr = err
		}
	})
	fs.EachRecord(func(rec *kgo.Record) {
		ev, err := r.codec.Decode(rec.Value)
		out = append(out, Record{
			Position:  Position{Partition: rec.Partition, Offset: rec.Offset},
			Timestamp: rec.Timestamp,
			Event:     ev,
			Err:       err,
			Value:     rec.Value,
		})
	})
	if errors.Is(fetchErr, kerr.OffsetOutOfRange) {
		return out, fmt.Errorf("%w: fetch: %w", ErrLogTruncated, fetchErr)
	}
	if len(out) == 0 && fetchErr != nil {
		return nil, fmt.Errorf("%w: fetch: %w", ErrUnavailable, fetchErr)
	}
	return out, nil
}

// Close stops the reader.
func (r *Reader) Close() { r.cl.Close() }
