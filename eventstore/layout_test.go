package eventstore_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/internal/kafkatest"
)

// addPartitions grows topic to n partitions, as an operator would with
// kafka-topics --alter --partitions.
func addPartitions(t *testing.T, seeds []string, topic string, n int) {
	t.Helper()
	adm := kadm.NewClient(rawClient(t, seeds))
	resp, err := adm.UpdatePartitions(testCtx(t), n, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("add partitions to %s: %v", topic, err)
	}
}

// topicPartitions is how many partitions the brokers say topic has.
func topicPartitions(t *testing.T, seeds []string, topic string) int {
	t.Helper()
	md, err := kadm.NewClient(rawClient(t, seeds)).Metadata(testCtx(t), topic)
	if err != nil {
		t.Fatalf("metadata %s: %v", topic, err)
	}
	return len(md.Topics[topic].Partitions)
}

// movedOrgs are orgs that Kafka's default hashing places in another
// partition over n partitions than over the store's count: the orgs whose
// histories adding partitions would split.
func movedOrgs(t *testing.T, s *eventstore.Store, n int) []string {
	t.Helper()
	hash := kgo.StickyKeyPartitioner(nil).ForTopic(s.EventsTopic())
	var out []string
	for i := 0; len(out) < 8; i++ {
		if i > 10000 {
			t.Fatal("no org moves when partitions are added")
		}
		org := "org-" + strconv.Itoa(i)
		if int32(hash.Partition(&kgo.Record{Key: []byte(org)}, n)) != s.PartitionFor(org) {
			out = append(out, org)
		}
	}
	return out
}

// TestAddedPartitionsKeepOrgsInTheirPartition adds partitions to the
// event topic under a deployment, as kafka-topics --alter does, and
// requires a store opened afterwards (a restarted or new node) to append
// every org's events to the partition that already holds its history, and
// to read no other partitions.
func TestAddedPartitionsKeepOrgsInTheirPartition(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	before := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	orgs := movedOrgs(t, before, 2*testPartitions)
	first := map[string]int32{}
	for _, org := range orgs {
		first[org] = appendOK(t, before, sampleEvent(org, 0))[0].Partition
	}

	addPartitions(t, seeds, before.EventsTopic(), 2*testPartitions)
	addPartitions(t, seeds, before.WorkTopic(), 2*testPartitions)
	after := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	if got := after.Partitions(); got != testPartitions {
		t.Fatalf("Partitions after adding some = %d, want the recorded %d", got, testPartitions)
	}
	for _, org := range orgs {
		pos := appendOK(t, after, sampleEvent(org, 1))[0]
		if pos.Partition != first[org] {
			t.Errorf("%s: appended to partition %d after partitions were added, its history is in %d", org, pos.Partition, first[org])
		}
		if p := after.PartitionFor(org); p != first[org] {
			t.Errorf("%s: PartitionFor = %d, want %d", org, p, first[org])
		}
	}
	ends, err := after.EndOffsets(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != testPartitions {
		t.Errorf("EndOffsets covers %d partitions, want the %d docket uses: %v", len(ends), testPartitions, ends)
	}
	// Work items keep their partitions too: a cancel signal must reach
	// the worker that holds the document's work item.
	for i := range 16 {
		item := eventstore.WorkItem{DocumentID: "doc-" + strconv.Itoa(i), OrgID: "o", FileName: "f"}
		if err := after.AppendWork(testCtx(t), item); err != nil {
			t.Fatal(err)
		}
	}
	hash := kgo.StickyKeyPartitioner(nil).ForTopic(after.WorkTopic())
	for _, r := range consumeRaw(t, seeds, after.WorkTopic(), 16) {
		if want := hash.Partition(r, testPartitions); int(r.Partition) != want {
			t.Errorf("work item %s in partition %d, want %d of the recorded %d", r.Key, r.Partition, want, testPartitions)
		}
	}
}

// TestLayoutOfAnExistingDeployment opens a store on topics created before
// docket recorded layouts (an upgrade), then adds partitions: the count
// the topics had at that first start is the one kept.
func TestLayoutOfAnExistingDeployment(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	adm := kadm.NewClient(rawClient(t, seeds))
	for _, topic := range []string{prefix + ".events", prefix + ".work"} {
		resp, err := adm.CreateTopic(testCtx(t), 3, -1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	// Partitions(testPartitions) is for topics still to be created: these
	// exist, with 3.
	s := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	if got := s.Partitions(); got != 3 {
		t.Fatalf("Partitions = %d, want the existing topic's 3", got)
	}
	addPartitions(t, seeds, s.EventsTopic(), 5)
	again := openStore(t, seeds, eventstore.Prefix(prefix))
	if got := again.Partitions(); got != 3 {
		t.Fatalf("Partitions after adding two = %d, want the recorded 3", got)
	}
	if n := topicPartitions(t, seeds, prefix+".layout"); n != 1 {
		t.Errorf("layout topic has %d partitions, want 1", n)
	}
}

// TestLayoutOfARecreatedTopic deletes the event topic and lets a store
// create it again with another count: the layout recorded for the old
// topic is not the new one's.
func TestLayoutOfARecreatedTopic(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	old := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	adm := kadm.NewClient(rawClient(t, seeds))
	kafkatest.DeleteTopic(t, adm, old.EventsTopic())
	s := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(2))
	if got := s.Partitions(); got != 2 {
		t.Fatalf("Partitions of the recreated topic = %d, want its own 2", got)
	}
	org := orgsByPartition(t, s, "org")[1]
	if pos := appendOK(t, s, sampleEvent(org, 0))[0]; pos.Partition != 1 {
		t.Errorf("%s appended to partition %d, want 1", org, pos.Partition)
	}
}

// TestNodesStartingTogetherAgreeOnTheLayout opens stores on a new
// deployment concurrently, each asking for a different partition count
// for the topics it may create: all must hash over the one count the
// topic got, and the layout keeps one record per topic that counts.
func TestNodesStartingTogetherAgreeOnTheLayout(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	const n = 4
	stores := make([]*eventstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stores[i], errs[i] = eventstore.Open(testCtx(t), seeds, eventstore.Prefix(prefix), eventstore.Partitions(int32(2+i)))
		})
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("Open %d: %v", i, errs[i])
		}
		t.Cleanup(s.Close)
	}
	want := int32(topicPartitions(t, seeds, prefix+".events"))
	for i, s := range stores {
		if got := s.Partitions(); got != want {
			t.Errorf("store %d: Partitions = %d, the topic has %d", i, got, want)
		}
	}
}

// TestReadOnlyStoreRecordsNoLayout opens a ReadOnly store on a deployment
// without a layout topic, as the tools do on a log written before layouts
// existed: it uses the topic as it is and creates nothing.
func TestReadOnlyStoreRecordsNoLayout(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	adm := kadm.NewClient(rawClient(t, seeds))
	resp, err := adm.CreateTopic(testCtx(t), 3, -1, nil, prefix+".events")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	// A ReadOnly store takes an unknown topic at its word (ErrNoTopic), and
	// a broker can answer before it has learned of the new one.
	kafkatest.WaitTopic(t, adm, prefix+".events")
	// No layout topic is an answer, not a wait: Open must not retry until
	// its context ends (it did, and took it as the answer then).
	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	s, err := eventstore.Open(ctx, seeds, eventstore.Prefix(prefix), eventstore.ReadOnly())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	if ctx.Err() != nil {
		t.Fatalf("Open returned only when its context ended: %v", ctx.Err())
	}
	if got := s.Partitions(); got != 3 {
		t.Errorf("Partitions = %d, want 3", got)
	}
	topics, err := adm.ListTopics(testCtx(t), prefix+".layout", prefix+".work")
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range topics {
		if td.Err == nil {
			t.Errorf("ReadOnly store created %s", td.Topic)
		}
	}
}
