package projections

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/eventstore"
)

// ErrForeignLog is returned when views built from one event log are run
// against another: another topic, or a topic of the same name that was
// deleted and created again.
var ErrForeignLog = errors.New("projections: views were built from another event log")

// logKey holds the event log the views are built from. Their offsets mean
// nothing in any other log: resumed there, the views would skip that log's
// first events, or wait for offsets it never reaches, and a node would
// answer every write with a timeout. So Run refuses a log that is not
// theirs instead of folding it into them. The views are not removed: if
// the old log is gone, they are the last copy of what it held.
var logKey = []byte("meta/log")

// logIdentity names an event log: its topic, and the topic id Kafka gave
// it when it was created ("" from brokers without topic ids).
type logIdentity struct {
	Topic   string `json:"topic"`
	TopicID string `json:"topic_id"`
}

// CheckLog returns ErrForeignLog unless the views were built from the
// event log topic (topic id id) or hold no record of their log. It writes
// nothing; Run records the log.
func (v *Views) CheckLog(topic, id string) error {
	_, err := v.checkLog(logIdentity{topic, id})
	return err
}

// checkLog compares the recorded log with want, and says whether want
// should be recorded: the views have no record (new views, or views
// written before logs were recorded), or one without a topic id.
func (v *Views) checkLog(want logIdentity) (record bool, err error) {
	val, closer, err := v.db.Get(logKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("projections: %w", err)
	}
	var have logIdentity
	err = json.Unmarshal(val, &have)
	closer.Close()
	if err != nil {
		return false, fmt.Errorf("projections: read %s: %w", logKey, err)
	}
	if have.Topic != want.Topic || (have.TopicID != "" && want.TopicID != "" && have.TopicID != want.TopicID) {
		return false, fmt.Errorf("%w: the views in %s were built from %s (topic id %s), not from %s (topic id %s); "+
			"move them away to build views from this log, or run against the log they were built from",
			ErrForeignLog, v.dir, have.Topic, orNone(have.TopicID), want.Topic, orNone(want.TopicID))
	}
	return have.TopicID == "" && want.TopicID != "", nil
}

// bindLog checks the views against the log and records it if they have no
// record of their own.
func (v *Views) bindLog(topic, id string) error {
	want := logIdentity{topic, id}
	record, err := v.checkLog(want)
	if err != nil || !record {
		return err
	}
	val, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	// Durable at once (commitDurable): a record lost in a crash would let
	// the views meet another log unchecked once.
	b := v.db.NewBatch()
	defer b.Close()
	if err := b.Set(logKey, val, nil); err != nil {
		return fmt.Errorf("projections: record the log: %w", err)
	}
	if err := v.commitDurable(b); err != nil {
		return fmt.Errorf("projections: record the log: %w", err)
	}
	return nil
}

// isLogKey reports whether key is the record of the views' log, which
// says where views came from, not what the fold made of it.
func isLogKey(key []byte) bool { return bytes.Equal(key, logKey) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// CheckStart returns eventstore.ErrLogTruncated if a partition of store's
// log starts after the offset the views need next from it: the events
// between were deleted (a retention the event topic must not have), and
// views folded without them would be wrong without a sign of it. Run
// checks it too.
func (v *Views) CheckStart(ctx context.Context, store *eventstore.Store) error {
	from := map[int32]int64{}
	applied := v.Offsets()
	for p := range store.Partitions() {
		from[p] = applied[p]
	}
	return checkStart(ctx, store, from)
}

func checkStart(ctx context.Context, store *eventstore.Store, from map[int32]int64) error {
	start, err := store.StartOffsets(ctx)
	if err != nil {
		return err
	}
	for p, next := range from {
		if start[p] > next {
			return fmt.Errorf("projections: %w: partition %d starts at offset %d, and the views need offset %d next: events %d to %d were deleted (does %s have a retention? it needs retention.ms=-1)",
				eventstore.ErrLogTruncated, p, start[p], next, next, start[p]-1, store.EventsTopic())
		}
	}
	return nil
}
