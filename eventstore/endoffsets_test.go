package eventstore_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/docket/docket/eventstore"
)

// failListOffsets makes the next n ListOffsets requests of c answer code
// for every partition, as a cluster whose leaders are moving does, and
// counts the requests it answered.
func failListOffsets(c *kfake.Cluster, n int32, code int16) *atomic.Int32 {
	var answered atomic.Int32
	c.ControlKey(int16(kmsg.ListOffsets), func(r kmsg.Request) (kmsg.Response, error, bool) {
		if answered.Load() >= n {
			return nil, nil, false
		}
		c.KeepControl()
		answered.Add(1)
		req := r.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &answered
}

// TestEndOffsetsWaitsForLeaders: right after a cluster creates the topics,
// partitions may answer NOT_LEADER_FOR_PARTITION for a moment. EndOffsets
// (which a starting node calls) asks again instead of failing the start;
// an error Kafka does not call retriable still fails at once.
func TestEndOffsetsWaitsForLeaders(t *testing.T) {
	skipOnRealKafka(t)
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(testPartitions))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := openStore(t, c.ListenAddrs(), eventstore.Prefix(testPrefix(t)), eventstore.Partitions(testPartitions),
		eventstore.RequestRetries(1))
	appendOK(t, s, sampleEvent("org-a", 0))

	moving := failListOffsets(c, 12, kerr.NotLeaderForPartition.Code)
	end, err := s.EndOffsets(testCtx(t))
	if err != nil {
		t.Fatalf("EndOffsets while leaders move: %v", err)
	}
	if moving.Load() != 12 {
		t.Fatalf("%d ListOffsets requests refused, want 12", moving.Load())
	}
	if got := end[s.PartitionFor("org-a")]; got != 1 || len(end) != testPartitions {
		t.Fatalf("end offsets %v: want %d partitions, org-a's at 1", end, testPartitions)
	}

	denied := failListOffsets(c, 1, kerr.TopicAuthorizationFailed.Code)
	if _, err := s.EndOffsets(testCtx(t)); !errors.Is(err, eventstore.ErrUnavailable) || !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("EndOffsets refused by ACLs: %v, want ErrUnavailable wrapping TOPIC_AUTHORIZATION_FAILED", err)
	}
	if denied.Load() != 1 {
		t.Fatalf("a non-retriable error was asked %d times, want once", denied.Load())
	}
}
