package eventstore_test

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

func TestStoreNames(t *testing.T) {
	t.Parallel()
	s, seeds := setup(t)
	prefix := prefixOf(s)
	if got, want := s.EventsTopic(), prefix+".events"; got != want {
		t.Errorf("EventsTopic = %q, want %q", got, want)
	}
	if got, want := s.WorkTopic(), prefix+".work"; got != want {
		t.Errorf("WorkTopic = %q, want %q", got, want)
	}
	if got, want := s.GroupName("workers"), prefix+"-workers"; got != want {
		t.Errorf("GroupName = %q, want %q", got, want)
	}
	if got := s.Partitions(); got != testPartitions {
		t.Errorf("Partitions = %d, want %d", got, testPartitions)
	}
	if !reflect.DeepEqual(s.Seeds(), seeds) {
		t.Errorf("Seeds = %v, want %v", s.Seeds(), seeds)
	}
}

// TestAppendPositionsAndPartitioning checks where appended events land: one
// partition per org, chosen as PartitionFor says, in append order, with the
// org id as key and the type in the docket-type header.
func TestAppendPositionsAndPartitioning(t *testing.T) {
	t.Parallel()
	s, seeds := setup(t)

	const nOrgs, perOrg = 16, 3
	orgs := make([]string, nOrgs)
	parts := map[int32]bool{}
	for i := range orgs {
		orgs[i] = "org-" + strconv.Itoa(i)
		parts[s.PartitionFor(orgs[i])] = true
	}
	if len(parts) < 2 {
		t.Fatalf("%d orgs hash to %d partition(s) of %d; the test needs a spread", nOrgs, len(parts), s.Partitions())
	}

	// Interleave the orgs' events, over two Append calls, so that order is
	// checked both within a call and across calls.
	var events []domain.Event
	for n := range perOrg {
		for _, org := range orgs {
			events = append(events, sampleEvent(org, n))
		}
	}
	half := len(events) / 2
	pos := append(appendOK(t, s, events[:half]...), appendOK(t, s, events[half:]...)...)

	orgPart := map[string]int32{}
	lastOffset := map[int32]int64{}
	seen := map[eventstore.Position]bool{}
	for i, e := range events {
		org, p := e.Header().OrgID, pos[i]
		if seen[p] {
			t.Fatalf("position %+v returned twice", p)
		}
		seen[p] = true
		if p.Partition < 0 || p.Partition >= s.Partitions() || p.Offset < 0 {
			t.Fatalf("event %d: position %+v out of range", i, p)
		}
		if want := s.PartitionFor(org); p.Partition != want {
			t.Errorf("event %d of %s landed in partition %d, PartitionFor says %d", i, org, p.Partition, want)
		}
		if prev, ok := orgPart[org]; ok && prev != p.Partition {
			t.Errorf("%s spans partitions %d and %d", org, prev, p.Partition)
		}
		orgPart[org] = p.Partition
		if last, ok := lastOffset[p.Partition]; ok && p.Offset <= last {
			t.Errorf("event %d: offset %d in partition %d not after %d: append order lost", i, p.Offset, p.Partition, last)
		}
		lastOffset[p.Partition] = p.Offset
	}
	used := map[int32]bool{}
	for _, p := range orgPart {
		used[p] = true
	}
	if len(used) != len(parts) {
		t.Errorf("events used %d partitions, PartitionFor predicts %d", len(used), len(parts))
	}

	// The records as a plain consumer sees them.
	raw := consumeRaw(t, seeds, s.EventsTopic(), len(events))
	byPos := map[eventstore.Position]int{}
	for i, p := range pos {
		byPos[p] = i
	}
	for _, r := range raw {
		i, ok := byPos[eventstore.Position{Partition: r.Partition, Offset: r.Offset}]
		if !ok {
			t.Errorf("record at %d/%d was not returned by Append", r.Partition, r.Offset)
			continue
		}
		e := events[i]
		if string(r.Key) != e.Header().OrgID {
			t.Errorf("record %d/%d key %q, want org id %q", r.Partition, r.Offset, r.Key, e.Header().OrgID)
		}
		var types []string
		for _, h := range r.Headers {
			if h.Key == eventstore.TypeHeader {
				types = append(types, string(h.Value))
			}
		}
		if len(types) != 1 || types[0] != e.Type() {
			t.Errorf("record %d/%d %s headers %v, want one %q", r.Partition, r.Offset, eventstore.TypeHeader, types, e.Type())
		}
		got, err := s.Codec().Decode(r.Value)
		if err != nil {
			t.Errorf("record %d/%d: decode: %v", r.Partition, r.Offset, err)
		} else if !reflect.DeepEqual(got, e) {
			t.Errorf("record %d/%d decodes to %#v, want %#v", r.Partition, r.Offset, got, e)
		}
	}
}

func TestEndOffsets(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := testCtx(t)

	end, err := s.EndOffsets(ctx)
	if err != nil {
		t.Fatalf("EndOffsets: %v", err)
	}
	want := map[int32]int64{}
	for p := range s.Partitions() {
		want[p] = 0
	}
	if !reflect.DeepEqual(end, want) {
		t.Fatalf("EndOffsets of new topic = %v, want %v", end, want)
	}

	// Partition p gets p+1 events, over two appends; the last partition
	// gets none.
	orgs := orgsByPartition(t, s, "org")
	for round := range 2 {
		var events []domain.Event
		for p, org := range orgs {
			if p == s.Partitions()-1 {
				continue
			}
			for n := range int(p) + 1 {
				if (n+round)%2 == 0 {
					events = append(events, sampleEvent(org, n))
				}
			}
		}
		for _, pos := range appendOK(t, s, events...) {
			want[pos.Partition] = max(want[pos.Partition], pos.Offset+1)
		}
	}
	for p := range s.Partitions() {
		if p == s.Partitions()-1 {
			if want[p] != 0 {
				t.Fatalf("partition %d got records", p)
			}
		} else if want[p] != int64(p)+1 {
			t.Fatalf("partition %d: positions end at %d, want %d", p, want[p], p+1)
		}
	}
	end, err = s.EndOffsets(ctx)
	if err != nil {
		t.Fatalf("EndOffsets: %v", err)
	}
	if !reflect.DeepEqual(end, want) {
		t.Errorf("EndOffsets = %v, want %v", end, want)
	}
}

// TestOpenIdempotent opens the same prefix again, asking for another
// partition count: the existing topics are kept as they are.
func TestOpenIdempotent(t *testing.T) {
	t.Parallel()
	s1, seeds := setup(t)
	prefix := prefixOf(s1)
	org := "org-reopen"
	p1 := appendOK(t, s1, sampleEvent(org, 0))

	for _, n := range []int32{s1.Partitions() + 3, 1} {
		s2 := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(n))
		if s2.Partitions() != s1.Partitions() {
			t.Fatalf("reopened with Partitions(%d): Partitions() = %d, want %d", n, s2.Partitions(), s1.Partitions())
		}
		if s2.PartitionFor(org) != s1.PartitionFor(org) {
			t.Fatalf("PartitionFor(%q) differs between stores", org)
		}
		p2 := appendOK(t, s2, sampleEvent(org, 1))
		if p2[0].Partition != p1[0].Partition || p2[0].Offset <= p1[0].Offset {
			t.Fatalf("append through reopened store at %+v, first store's at %+v", p2[0], p1[0])
		}
		p1 = p2
	}

	// The topics themselves were not altered.
	td, err := kadm.NewClient(s1.Client()).ListTopics(testCtx(t), s1.EventsTopic(), s1.WorkTopic())
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	for _, topic := range []string{s1.EventsTopic(), s1.WorkTopic()} {
		d, ok := td[topic]
		if !ok || d.Err != nil {
			t.Fatalf("topic %s: %+v", topic, d)
		}
		if len(d.Partitions) != testPartitions {
			t.Errorf("topic %s has %d partitions, want %d", topic, len(d.Partitions), testPartitions)
		}
	}
	end, err := s1.EndOffsets(testCtx(t))
	if err != nil {
		t.Fatalf("EndOffsets: %v", err)
	}
	if got := end[p1[0].Partition]; got != 3 {
		t.Errorf("end offset of %s's partition = %d, want 3", org, got)
	}
}
