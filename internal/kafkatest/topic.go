package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// DeleteTopic deletes topic and waits until metadata no longer lists it,
// for at most 30 s: a deletion reaches a cluster's brokers one by one, and
// a topic created again under its name before then is refused.
func DeleteTopic(t testing.TB, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
	awaitTopic(t, adm, topic, "still listed", func(td kadm.TopicDetail) bool { return td.Err != nil })
}

// WaitTopic waits until metadata lists topic, every partition with a
// leader, for at most 30 s: a broker answers metadata from its own copy of
// the cluster's, so a topic the controller has just created can still be
// unknown to it (a ReadOnly store opened at once found no event topic on
// Kafka 4.1).
func WaitTopic(t testing.TB, adm *kadm.Client, topic string) {
	t.Helper()
	awaitTopic(t, adm, topic, "not listed with leaders", func(td kadm.TopicDetail) bool {
		if td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
		return true
	})
}

// awaitTopic asks for topic's metadata every 20 ms until done accepts it,
// and fails the test with what after 30 s.
func awaitTopic(t testing.TB, adm *kadm.Client, topic, what string, done func(kadm.TopicDetail) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		md, err := adm.Metadata(ctx, topic)
		if td, ok := md.Topics[topic]; err == nil && ok && done(td) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s %s: %v", topic, what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
