package projections_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/projections"
)

// TestLostWorkIsMadeGoodPerOwnedPartition deletes every work item unread,
// as the work topic's retention would, then runs one node's lost-work
// check as its ownership changes: owning nothing (a rebalance), two event
// partitions, then all four. Each check dispatches again the queued
// documents of the partitions it owns and has not made good yet, so every
// document is dispatched again exactly once, by the check that first owns
// its partition.
func TestLostWorkIsMadeGoodPerOwnedPartition(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	orgs := e.orgs()
	ids := make([]string, len(orgs)) // by event partition
	for p, org := range orgs {
		ids[p] = e.queue(org, fmt.Sprintf("doc_%d", p))
	}
	first := e.startDuty()
	e.work.dispatched(ids...)
	first.stop()

	adm := kadm.NewClient(e.store.Client())
	ends, err := adm.ListEndOffsets(e.ctx, e.store.WorkTopic())
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := adm.DeleteRecords(e.ctx, ends.Offsets())
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}

	check := projections.NewLostWorkCheck(&projections.Dispatcher{
		Store: e.store, Views: e.views, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	want := map[string]int{}
	for _, id := range ids {
		want[id] = 1
	}
	for _, step := range []struct {
		name  string
		owned []int32
		again []int32 // event partitions whose documents are dispatched again
	}{
		{"owning none", nil, nil},
		{"owning 0 and 1", []int32{0, 1}, []int32{0, 1}},
		{"owning all", []int32{0, 1, 2, 3}, []int32{2, 3}},
		{"owning all, again", []int32{0, 1, 2, 3}, nil},
	} {
		if err := check.Check(e.ctx, step.owned...); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		for _, p := range step.again {
			want[ids[p]]++
		}
		if got := e.work.atEnd(e.ctx); !maps.Equal(got, want) {
			t.Fatalf("%s: work items dispatched %v, want %v", step.name, got, want)
		}
	}
}
