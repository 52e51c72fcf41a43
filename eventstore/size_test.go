package eventstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// bigResult is a DocumentSucceeded of about n bytes of line items whose
// descriptions are random hex, so that compression cannot bring the record
// under a broker's limit.
func bigResult(t *testing.T, org string, n int) *domain.DocumentSucceeded {
	t.Helper()
	ev := &domain.DocumentSucceeded{Meta: eventstore.NewMeta(org, "worker", "corr"), DocumentID: "doc-big", ClaimID: "claim-1"}
	raw := make([]byte, 32)
	for size := 0; size < n; size += 2*len(raw) + 24 {
		if _, err := rand.Read(raw); err != nil {
			t.Fatal(err)
		}
		ev.LineItems = append(ev.LineItems, domain.LineItem{Description: hex.EncodeToString(raw), Quantity: 1, UnitPrice: float64(size), Amount: float64(size)})
	}
	return ev
}

// maxMessageBytes reads a topic's max.message.bytes from the brokers.
func maxMessageBytes(t *testing.T, seeds []string, topic string) int {
	t.Helper()
	n, err := strconv.Atoi(topicSetting(t, seeds, topic)["max.message.bytes"])
	if err != nil {
		t.Fatalf("max.message.bytes of %s: %v", topic, err)
	}
	return n
}

// topicSetting reads a topic's configuration from the brokers. On a
// cluster a new topic reaches the brokers one by one, and one that has
// not learnt of it yet answers UNKNOWN_TOPIC_OR_PARTITION, so it asks
// again until the test's deadline.
func topicSetting(t *testing.T, seeds []string, topic string) map[string]string {
	t.Helper()
	ctx := testCtx(t)
	adm := kadm.NewClient(rawClient(t, seeds))
	for {
		conf, err := eventstore.TopicConfig(ctx, adm, topic)
		if err == nil {
			return conf
		}
		select {
		case <-ctx.Done():
			t.Fatalf("configuration of %s: %v", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestEventsLargerThanKafkasDefaultRoundTrip appends an event of 3 MB,
// three times the 1 MiB that Kafka's brokers and franz-go's producer allow
// by default: the store's topics and producer must agree on a larger limit.
func TestEventsLargerThanKafkasDefaultRoundTrip(t *testing.T) {
	t.Parallel()
	s, seeds := setup(t)
	for _, topic := range []string{s.EventsTopic(), s.WorkTopic()} {
		if got := maxMessageBytes(t, seeds, topic); got != eventstore.DefaultMaxRecordBytes {
			t.Errorf("%s: max.message.bytes = %d, want %d", topic, got, eventstore.DefaultMaxRecordBytes)
		}
	}
	ev := bigResult(t, "org-big", 3<<20)
	pos := appendOK(t, s, ev)
	got := readN(t, newReader(t, s, map[int32]int64{pos[0].Partition: pos[0].Offset}), 1)
	back, ok := got[0].Event.(*domain.DocumentSucceeded)
	if !ok || len(back.LineItems) != len(ev.LineItems) || back.LineItems[len(ev.LineItems)-1] != ev.LineItems[len(ev.LineItems)-1] {
		t.Fatalf("read back %T with a different result (%d line items appended)", got[0].Event, len(ev.LineItems))
	}
}

// TestAppendLargerThanMaxRecordBytes: an event over the configured limit
// fails with ErrTooLarge, which is not retryable, and leaves the store
// able to append the next one.
func TestAppendLargerThanMaxRecordBytes(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	const limit = 128 << 10
	s := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions), eventstore.MaxRecordBytes(limit))
	if got := maxMessageBytes(t, seeds, s.EventsTopic()); got != limit {
		t.Errorf("max.message.bytes = %d, want %d", got, limit)
	}
	_, err := s.Append(testCtx(t), bigResult(t, "org-big", 200<<10))
	if !errors.Is(err, eventstore.ErrTooLarge) || eventstore.IsRetryable(err) {
		t.Fatalf("Append(200 KiB) = %v, want ErrTooLarge, not retryable", err)
	}
	pos := appendOK(t, s, bigResult(t, "org-big", 64<<10))
	if got := readN(t, newReader(t, s, map[int32]int64{pos[0].Partition: pos[0].Offset}), 1); got[0].Event.Type() != "DocumentSucceeded" {
		t.Fatalf("read back %s", got[0].Event.Type())
	}
}

// TestOpenWarnsOfASmallerTopic: a topic made before (or by an operator)
// with Kafka's default limit keeps it, and Open says so.
func TestOpenWarnsOfASmallerTopic(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	small := "1048588"
	resp, err := kadm.NewClient(rawClient(t, seeds)).CreateTopic(testCtx(t), testPartitions, -1, map[string]*string{"max.message.bytes": &small}, prefix+".events")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var logs bytes.Buffer
	s := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Logger(zerolog.New(&logs)))
	if got := maxMessageBytes(t, seeds, s.EventsTopic()); got != 1048588 {
		t.Errorf("the existing topic's max.message.bytes changed to %d", got)
	}
	if !strings.Contains(logs.String(), `"max_message_bytes":1048588`) || !strings.Contains(logs.String(), `"level":"warn"`) {
		t.Errorf("no warning of the topic's limit in the logs: %s", logs.String())
	}
}

// TestOpenRefusesATinyMaxRecordBytes: below 64 KiB ordinary events would
// fail, so Open refuses before it connects.
func TestOpenRefusesATinyMaxRecordBytes(t *testing.T) {
	t.Parallel()
	_, err := eventstore.Open(context.Background(), []string{"127.0.0.1:1"}, eventstore.MaxRecordBytes(1000))
	if !errors.Is(err, eventstore.ErrInvalidOption) {
		t.Fatalf("Open = %v, want ErrInvalidOption", err)
	}
}
