package eventstore_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/internal/kafkatest"
)

// TestLostWorkNamesPartitionsWhoseUnreadItemsWereDeleted deletes work
// items, as the work topic's retention would, and checks LostWork against
// what the workers' group committed: nothing committed, a commit below the
// new start, and one at it.
func TestLostWorkNamesPartitionsWhoseUnreadItemsWereDeleted(t *testing.T) {
	t.Parallel()
	s, seeds := setup(t)
	adm := kadm.NewClient(rawClient(t, seeds))
	lostWork := func() map[int32]int64 {
		t.Helper()
		lost, err := s.LostWork(testCtx(t))
		if err != nil {
			t.Fatalf("LostWork: %v", err)
		}
		return lost
	}
	var items []eventstore.WorkItem
	perPartition := map[int32]int64{}
	for i := 0; len(perPartition) < 2; i++ {
		doc := fmt.Sprintf("doc_%d", i)
		items = append(items, eventstore.WorkItem{ID: "evt_" + doc, OrgID: "org_1", DocumentID: doc, Attempt: 1, Phase: "full"})
		perPartition[s.WorkPartitionFor(doc)]++
	}
	if err := s.AppendWork(testCtx(t), items...); err != nil {
		t.Fatal(err)
	}
	if lost := lostWork(); len(lost) != 0 {
		t.Fatalf("LostWork before anything was deleted = %v", lost)
	}
	ends, err := adm.ListEndOffsets(testCtx(t), s.WorkTopic())
	if err != nil {
		t.Fatal(err)
	}
	for p, n := range perPartition {
		if o, _ := ends.Lookup(s.WorkTopic(), p); o.Offset != n {
			t.Fatalf("work partition %d ends at %d; WorkPartitionFor put %d items there", p, o.Offset, n)
		}
	}

	// Every item deleted, none read: nothing committed.
	deleted, err := adm.DeleteRecords(testCtx(t), ends.Offsets())
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	if lost := lostWork(); !maps.Equal(lost, perPartition) {
		t.Fatalf("LostWork = %v, want the partitions that held items, at their ends: %v", lost, perPartition)
	}

	// One partition read to its end, the other committed below its start.
	commits := kadm.Offsets{}
	var read, behind int32 = -1, -1
	for p, n := range perPartition {
		at := n
		if read >= 0 {
			at, behind = n-1, p
		} else {
			read = p
		}
		commits.Add(kadm.Offset{Topic: s.WorkTopic(), Partition: p, At: at, LeaderEpoch: -1})
	}
	committed, err := adm.CommitOffsets(testCtx(t), s.GroupName("workers"), commits)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatalf("CommitOffsets: %v", err)
	}
	if lost := lostWork(); len(lost) != 1 || lost[behind] != perPartition[behind] {
		t.Fatalf("LostWork = %v, want only partition %d (committed %d, starts at %d); partition %d was read to its end",
			lost, behind, perPartition[behind]-1, perPartition[behind], read)
	}
}

// TestWorkTopicReplacedIsRecorded deletes the work topic, which takes its
// unread items and the workers' offsets with it, and lets a store create
// it again: the layout tells it apart from a first creation, with the time
// the new topic was first met, for this store and for every later one.
func TestWorkTopicReplacedIsRecorded(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	first := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	if since, ok := first.WorkTopicReplaced(); ok {
		t.Fatalf("WorkTopicReplaced of a new deployment = %v, true", since)
	}
	adm := kadm.NewClient(rawClient(t, seeds))
	kafkatest.DeleteTopic(t, adm, first.WorkTopic())

	// Record timestamps have milliseconds.
	before := time.Now().Truncate(time.Millisecond)
	second := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	after := time.Now()
	since, ok := second.WorkTopicReplaced()
	if !ok || since.Before(before) || since.After(after) {
		t.Fatalf("WorkTopicReplaced after creating it again = %v, %v; want true, between %v and %v", since, ok, before, after)
	}
	if again, ok := openStore(t, seeds, eventstore.Prefix(prefix)).WorkTopicReplaced(); !ok || !again.Equal(since) {
		t.Fatalf("WorkTopicReplaced of a later store = %v, %v; want %v, true", again, ok, since)
	}
}
