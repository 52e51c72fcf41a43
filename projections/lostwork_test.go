package projections_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/internal/kafkatest"
	"github.com/docket/docket/projections"
)

// dispatchedOnePerPartition queues a document in each event partition, and
// has a dispatcher dispatch them; it returns their work item ids, by
// event partition.
func dispatchedOnePerPartition(e *dutyEnv, name string) []string {
	e.t.Helper()
	orgs := e.orgs()
	ids := make([]string, len(orgs))
	for p, org := range orgs {
		ids[p] = e.queue(org, fmt.Sprintf("%s_%d", name, p))
	}
	d := e.startDuty()
	e.work.dispatched(ids...)
	d.stop()
	return ids
}

// checkSteps runs one node's lost-work check as its ownership changes:
// owning none (a rebalance), two event partitions, all four, and all
// again. Each step must dispatch again the documents of ids (by event
// partition) of the partitions it gains, and nothing else; want is what
// work held before.
func checkSteps(e *dutyEnv, check *projections.LostWorkCheck, work *workWatch, ids []string, want map[string]int) {
	e.t.Helper()
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
			e.t.Fatalf("%s: %v", step.name, err)
		}
		for _, p := range step.again {
			want[ids[p]]++
		}
		if got := work.atEnd(e.ctx); !maps.Equal(got, want) {
			e.t.Fatalf("%s: work items dispatched %v, want %v", step.name, got, want)
		}
	}
}

// newCheck is a lost-work check of a node using store.
func newCheck(e *dutyEnv, store *eventstore.Store) *projections.LostWorkCheck {
	return projections.NewLostWorkCheck(&projections.Dispatcher{
		Store: store, Views: e.views, Log: zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.WarnLevel),
	})
}

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
	ids := dispatchedOnePerPartition(e, "doc")
	deleteWorkItems(e)
	checkSteps(e, newCheck(e, e.store), e.work, ids, times(ids, 1))
}

// TestLostWorkWaitsForTheViews runs the check of a node whose views have
// applied none of the log yet, as on a node just started with an empty
// data dir: it must neither dispatch nor record the loss as made good,
// and once the views caught up it must dispatch every document again.
func TestLostWorkWaitsForTheViews(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	ids := dispatchedOnePerPartition(e, "doc")
	deleteWorkItems(e)
	behind := setup(t).v
	check := projections.NewLostWorkCheck(&projections.Dispatcher{
		Store: e.store, Views: behind, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	// A second is ample for the admin requests before the wait, on an
	// embedded broker; the wait itself cannot end.
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	err := check.Check(ctx, 0, 1, 2, 3)
	cancel()
	if !errors.Is(err, projections.ErrNotCaughtUp) {
		t.Fatalf("check on views that applied nothing = %v, want ErrNotCaughtUp", err)
	}
	if got := e.work.atEnd(e.ctx); !maps.Equal(got, times(ids, 1)) {
		t.Fatalf("work items after that check %v, want each once", got)
	}
	runViews(t, behind, e.store)
	if err := check.Check(e.ctx, 0, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	if got := e.work.atEnd(e.ctx); !maps.Equal(got, times(ids, 2)) {
		t.Fatalf("work items once the views caught up %v, want each twice", got)
	}
}

// deleteWorkItems deletes every item on the work topic, unread.
func deleteWorkItems(e *dutyEnv) {
	e.t.Helper()
	adm := kadm.NewClient(e.store.Client())
	ends, err := adm.ListEndOffsets(e.ctx, e.store.WorkTopic())
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		e.t.Fatal(err)
	}
	deleted, err := adm.DeleteRecords(e.ctx, ends.Offsets())
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		e.t.Fatalf("DeleteRecords: %v", err)
	}
}

// times counts each of ids n times.
func times(ids []string, n int) map[string]int {
	out := make(map[string]int, len(ids))
	for _, id := range ids {
		out[id] = n
	}
	return out
}

// TestLostWorkAfterTheWorkTopicWasReplaced deletes the work topic with an
// item per event partition unread, and opens a store that creates it
// again. No offset shows that loss (the new topic starts at 0), the
// layout does: one node's check dispatches again, per owned event
// partition and once, the documents queued before the new topic, and
// never one queued after it (past the minute allowed for clock skew).
func TestLostWorkAfterTheWorkTopicWasReplaced(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	before := dispatchedOnePerPartition(e, "before")

	adm := kadm.NewClient(e.store.Client())
	kafkatest.DeleteTopic(t, adm, e.store.WorkTopic())
	store, err := eventstore.Open(e.ctx, e.seeds, eventstore.Prefix("duties-test"), eventstore.Partitions(dutyPartitions))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	since, ok := store.WorkTopicReplaced()
	if !ok {
		t.Fatal("WorkTopicReplaced after the work topic was created again: false")
	}
	work := watchWork(t, e.seeds, store.WorkTopic())

	// Queued after the new topic (and the skew): dispatched by the
	// duties as usual, never by the check. No dispatcher runs here.
	for p, org := range e.orgs() {
		events, _ := queued(org, fmt.Sprintf("after_%d", p))
		for _, ev := range events {
			ev.Header().OccurredAt = since.Add(2 * time.Minute)
		}
		pos, err := e.store.Append(e.ctx, events...)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.views.WaitAll(e.ctx, pos); err != nil {
			t.Fatal(err)
		}
	}

	checkSteps(e, newCheck(e, store), work, before, map[string]int{})
}
