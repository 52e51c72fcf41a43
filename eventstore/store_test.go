package eventstore_test

import (
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

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

// TestOccurredAtNeverGoesBackInAPartition: an event stamped before the
// latest one appended to its partition is restamped with that time (time
// travel reads a prefix of the log by occurred_at); other partitions keep
// their own stamps; and racing appenders leave a log whose stamps only rise.
func TestOccurredAtNeverGoesBackInAPartition(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	orgs := orgsByPartition(t, s, "stamp")
	a, b := orgs[0], orgs[1]

	late, early, other := sampleEvent(a, 0), sampleEvent(a, 1), sampleEvent(b, 2)
	t0 := early.Header().OccurredAt
	late.Header().OccurredAt = t0.Add(time.Millisecond)
	other.Header().OccurredAt = t0
	appendOK(t, s, late)
	pos := appendOK(t, s, early, other)
	if got := early.Header().OccurredAt; !got.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("event stamped %v after one stamped %v in its partition: occurred_at %v", t0, t0.Add(time.Millisecond), got)
	}
	if got := other.Header().OccurredAt; !got.Equal(t0) {
		t.Fatalf("event of another partition restamped from %v to %v", t0, got)
	}

	// Racing appenders: each stamps its event and then appends it.
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			appendOK(t, s, sampleEvent(a, i))
		})
	}
	wg.Wait()
	r := newReader(t, s, map[int32]int64{pos[0].Partition: 0})
	recs := readN(t, r, n+2)
	for i := 1; i < len(recs); i++ {
		prev, cur := recs[i-1].Event.Header().OccurredAt, recs[i].Event.Header().OccurredAt
		if cur.Before(prev) {
			t.Fatalf("offset %d occurred at %v, before offset %d at %v", recs[i].Position.Offset, cur, recs[i-1].Position.Offset, prev)
		}
	}
	// 200 acknowledged appends take far longer than a millisecond, so the
	// clock has passed the late stamp and the later events keep their own.
	if last := recs[len(recs)-1].Event.Header().OccurredAt; !last.After(t0.Add(time.Millisecond)) {
		t.Fatalf("stamps were held at the late event's time: last %v", last)
	}
}
