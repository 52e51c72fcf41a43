package eventstore_test

import (
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// joinGroup joins group on topic without auto-commit, as the workers and
// duties do; the member is closed when the test ends (closing twice is safe).
func joinGroup(t *testing.T, s *eventstore.Store, group, topic string) *eventstore.Group {
	t.Helper()
	g, err := s.JoinGroup(group, topic, "", kgo.DisableAutoCommit())
	if err != nil {
		t.Fatalf("JoinGroup: %v", err)
	}
	t.Cleanup(g.Close)
	return g
}

// pollGroup polls g until it has returned n records.
func pollGroup(t *testing.T, g *eventstore.Group, n int) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		recs := g.Poll(ctx, n-len(out))
		if ctx.Err() != nil {
			t.Fatalf("group poll: got %d of %d records: %v", len(out), n, ctx.Err())
		}
		out = append(out, recs...)
	}
	if len(out) != n {
		t.Fatalf("group poll returned %d records, want %d", len(out), n)
	}
	return out
}

// workItems decodes work records, checking their topic and key, and returns
// their ids sorted.
func workItems(t *testing.T, s *eventstore.Store, recs []*kgo.Record, sent map[string]eventstore.WorkItem) []string {
	t.Helper()
	var ids []string
	for _, r := range recs {
		if r.Topic != s.WorkTopic() {
			t.Errorf("record from topic %q, want %q", r.Topic, s.WorkTopic())
		}
		it, err := eventstore.UnmarshalWork(r.Value)
		if err != nil {
			t.Errorf("work record %d/%d: %v", r.Partition, r.Offset, err)
			continue
		}
		if want, ok := sent[it.ID]; !ok {
			t.Errorf("work record %d/%d: unknown item %+v", r.Partition, r.Offset, it)
		} else if !reflect.DeepEqual(it, want) {
			t.Errorf("work record %d/%d = %+v, want %+v", r.Partition, r.Offset, it, want)
		}
		if string(r.Key) != it.DocumentID {
			t.Errorf("work record %d/%d key %q, want document id %q", r.Partition, r.Offset, r.Key, it.DocumentID)
		}
		ids = append(ids, it.ID)
	}
	sort.Strings(ids)
	return ids
}

// TestWorkGroupAtLeastOnce is the workers' contract: a work item is received
// by the group, and after a member goes away its successor receives again
// every item whose offset was not committed, and none that was.
func TestWorkGroupAtLeastOnce(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := testCtx(t)
	group := s.GroupName("workers")

	docA := "doc-a"
	docB := "doc-b"
	for i := 0; s.PartitionFor(docB) == s.PartitionFor(docA) && i < 100; i++ {
		docB = "doc-b-" + strconv.Itoa(i)
	}
	sent := map[string]eventstore.WorkItem{}
	item := func(id, doc string, attempt int) eventstore.WorkItem {
		it := eventstore.WorkItem{ID: id, OrgID: "org-1", DocumentID: doc, Attempt: attempt,
			Phase: domain.PhaseFull, BlobKey: "sha256/" + doc, FileName: doc + ".pdf", ContentType: "application/pdf"}
		sent[id] = it
		return it
	}
	if err := s.AppendWork(ctx,
		item("a1", docA, 1), item("a2", docA, 2), item("a3", docA, 3), item("b1", docB, 1),
	); err != nil {
		t.Fatalf("AppendWork: %v", err)
	}

	// First member: receives everything, in order per document.
	g1 := joinGroup(t, s, group, s.WorkTopic())
	recs := pollGroup(t, g1, 4)
	if got, want := workItems(t, s, recs, sent), []string{"a1", "a2", "a3", "b1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first member received %v, want %v", got, want)
	}
	byID := map[string]*kgo.Record{}
	for _, r := range recs {
		it, _ := eventstore.UnmarshalWork(r.Value)
		byID[it.ID] = r
	}
	a1, a2, a3, b1 := byID["a1"], byID["a2"], byID["a3"], byID["b1"]
	if a1.Partition != a2.Partition || a2.Partition != a3.Partition || !(a1.Offset < a2.Offset && a2.Offset < a3.Offset) {
		t.Fatalf("one document's items not in one partition in order: %d/%d %d/%d %d/%d",
			a1.Partition, a1.Offset, a2.Partition, a2.Offset, a3.Partition, a3.Offset)
	}

	// Done with a1 and a2 only; then the member goes away.
	if err := g1.Commit(ctx, a1, a2); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := g1.Commit(ctx); err != nil {
		t.Fatalf("Commit of nothing: %v", err)
	}
	fetched, err := kadm.NewClient(s.Client()).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	if o, ok := fetched.Lookup(s.WorkTopic(), a2.Partition); !ok || o.Err != nil || o.At != a2.Offset+1 {
		t.Errorf("committed offset of %s/%d = %+v (found %v), want %d", s.WorkTopic(), a2.Partition, o, ok, a2.Offset+1)
	}
	if b1.Partition != a1.Partition {
		if o, ok := fetched.Lookup(s.WorkTopic(), b1.Partition); ok && o.At >= 0 {
			t.Errorf("partition %d of the uncommitted item has committed offset %d", b1.Partition, o.At)
		}
	}
	g1.Close()

	// Second member: a3 and b1 again, a1 and a2 not. a3 follows a1 and a2
	// in their partition, so receiving it first proves they were skipped.
	g2 := joinGroup(t, s, group, s.WorkTopic())
	recs = pollGroup(t, g2, 2)
	if got, want := workItems(t, s, recs, sent), []string{"a3", "b1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second member received %v, want the uncommitted %v", got, want)
	}
	if err := g2.Commit(ctx, recs...); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	g2.Close()

	// Third member, after everything was committed: only new items.
	if err := s.AppendWork(ctx, item("a4", docA, 4), item("b2", docB, 2)); err != nil {
		t.Fatalf("AppendWork: %v", err)
	}
	g3 := joinGroup(t, s, group, s.WorkTopic())
	recs = pollGroup(t, g3, 2)
	if got, want := workItems(t, s, recs, sent), []string{"a4", "b2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("third member received %v, want only the new %v", got, want)
	}
}

// TestGroupDecodesEvents consumes the event topic in a group, as the duties
// do, and decodes what it receives.
func TestGroupDecodesEvents(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)

	orgs := orgsByPartition(t, s, "org")
	want := map[eventstore.Position]domain.Event{}
	var events []domain.Event
	for _, org := range orgs {
		events = append(events, sampleEvent(org, 0), sampleEvent(org, 1), sampleEvent(org, 2))
	}
	for i, p := range appendOK(t, s, events...) {
		want[p] = events[i]
	}

	g := joinGroup(t, s, s.GroupName("duties"), s.EventsTopic())
	for _, r := range pollGroup(t, g, len(events)) {
		rec := g.Decode(r)
		if rec.Partition != r.Partition || rec.Offset != r.Offset || !rec.Timestamp.Equal(r.Timestamp) {
			t.Errorf("Decode(%d/%d) = position %+v, timestamp %v", r.Partition, r.Offset, rec.Position, rec.Timestamp)
		}
		if rec.Err != nil {
			t.Errorf("Decode(%d/%d): %v", r.Partition, r.Offset, rec.Err)
		} else if !reflect.DeepEqual(rec.Event, want[rec.Position]) {
			t.Errorf("Decode(%d/%d) = %#v, want %#v", r.Partition, r.Offset, rec.Event, want[rec.Position])
		}
	}
	if rec := g.Decode(&kgo.Record{Value: []byte("junk")}); rec.Err == nil || rec.Event != nil {
		t.Errorf("Decode(junk) = %+v, want an error", rec)
	}
}
