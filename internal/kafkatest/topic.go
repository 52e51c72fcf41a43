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
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil && md.Topics[topic].Err != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still listed: %v", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
