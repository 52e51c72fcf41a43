package eventstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/internal/logtest"
)

// TestEventTopicKeepsEventsForever: the event topic is the source of
// truth, so the store creates it with no retention and no compaction,
// whatever the brokers' defaults (Kafka's: seven days); so is the layout
// topic, whose first records fix the partition counts.
func TestEventTopicKeepsEventsForever(t *testing.T) {
	t.Parallel()
	s, seeds := setup(t)
	for _, topic := range []string{s.EventsTopic(), prefixOf(s) + ".layout"} {
		conf := topicSetting(t, seeds, topic)
		for k, want := range map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"} {
			if conf[k] != want {
				t.Errorf("%s of %s = %q, want %q", k, topic, conf[k], want)
			}
		}
	}
}

// TestOpenWarnsOfAnEventTopicThatDeletesEvents opens a store on an event
// topic created beforehand with Kafka's default retention: Open must say,
// at error level, that the topic deletes events and what to set.
func TestOpenWarnsOfAnEventTopicThatDeletesEvents(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	week := "604800000"
	adm := kadm.NewClient(rawClient(t, seeds))
	resp, err := adm.CreateTopic(testCtx(t), testPartitions, -1, map[string]*string{"retention.ms": &week}, prefix+".events")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Logger(zerolog.New(&logs)))
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"level":"error"`) && strings.Contains(line, "deletes events") && strings.Contains(line, "retention.ms="+week) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no error naming retention.ms=%s in the store's logs:\n%s", week, logs.String())
	}
}

// TestReaderRefusesDeletedOffsets deletes the first records of a
// partition, as a retention would, and reads it from offset 0: the reader
// must fail with ErrLogTruncated, not start silently where the log now
// starts, and StartOffsets must say where that is.
func TestReaderRefusesDeletedOffsets(t *testing.T) {
	t.Parallel()
	s, seeds := setup(t)
	org := orgsByPartition(t, s, "org")[0]
	for n := range 5 {
		appendOK(t, s, sampleEvent(org, n))
	}
	adm := kadm.NewClient(rawClient(t, seeds))
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: s.EventsTopic(), Partition: 0, At: 3})
	deleted, err := adm.DeleteRecords(testCtx(t), offsets)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	start, err := s.StartOffsets(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 3 || len(start) != testPartitions {
		t.Fatalf("StartOffsets = %v, want partition 0 at 3 of %d partitions", start, testPartitions)
	}
	r := newReader(t, s, map[int32]int64{0: 0})
	ctx := testCtx(t)
	for {
		recs, err := r.Poll(ctx, 10)
		if len(recs) > 0 {
			t.Fatalf("read %d records from offset %d of a partition whose offsets 0 to 2 are gone", len(recs), recs[0].Offset)
		}
		if errors.Is(err, eventstore.ErrLogTruncated) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no ErrLogTruncated: %v", err)
		}
	}
}
