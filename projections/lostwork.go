package projections

import (
	"context"
	"slices"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// DefaultLostWorkCheck is how often the duties look for work items the
// work topic deleted unread, unless Dispatcher.LostWorkCheck says
// otherwise: 30 s. Items go only after the topic's retention (seven days
// by Kafka's default), so the check is cheap next to what it guards: two
// admin requests, and a scan of the documents only once items are lost.
const DefaultLostWorkCheck = 30 * time.Second

// watchLostWork dispatches again the queued documents of owned partitions
// whose work items were deleted before a worker read them
// (eventstore.Store.LostWork), until ctx ends. Their DocumentQueued events
// were dispatched and committed long ago, so nothing else ever would: the
// documents would stay queued for good. A document dispatched twice costs
// a second run at most (claims are fenced, DESIGN invariant 3).
func (d *Dispatcher) watchLostWork(ctx context.Context) {
	every := d.LostWorkCheck
	if every <= 0 {
		every = DefaultLostWorkCheck
	}
	t := time.NewTicker(every)
	defer t.Stop()
	handled := lostHandled{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := d.recoverLostWork(ctx, handled, d.Owned()); err != nil && ctx.Err() == nil {
			d.Log.Warn().Err(err).Msg("duties: checking the work topic for lost items failed; retrying")
		}
	}
}

// lostHandled is where each work partition started when its loss was last
// made good for the documents of one event partition: the workers'
// offsets stay below it until they run again, and every check until then
// would dispatch the same documents again. It is kept per event partition
// because a node makes good only the ones it owns at the time: one that
// checks in a rebalance, owning few or none, must still make good the
// others once it owns them.
type lostHandled map[lostPair]int64

type lostPair struct{ work, events int32 }

// recoverLostWork does one check of watchLostWork for the documents of
// the event partitions in owned.
func (d *Dispatcher) recoverLostWork(ctx context.Context, handled lostHandled, owned []int32) error {
	lost, err := d.Store.LostWork(ctx)
	if err != nil || len(lost) == 0 {
		return err
	}
	todo := map[lostPair]int64{}
	for q, start := range lost {
		for _, p := range owned {
			if pair := (lostPair{q, p}); handled[pair] < start {
				todo[pair] = start
			}
		}
	}
	if len(todo) == 0 {
		return nil
	}
	items, err := d.Views.queuedWork(func(doc *domain.Document) bool {
		_, ok := todo[lostPair{d.Store.WorkPartitionFor(doc.ID), d.Store.PartitionFor(doc.OrgID)}]
		return ok
	})
	if err != nil {
		return err
	}
	if len(items) > 0 {
		if err := d.Store.AppendWork(ctx, items...); err != nil {
			return err
		}
		if d.OnRedispatch != nil {
			d.OnRedispatch(len(items))
		}
	}
	var work, events []int32
	for pair, start := range todo {
		handled[pair] = start
		work, events = append(work, pair.work), append(events, pair.events)
	}
	work, events = sortedSet(work), sortedSet(events)
	d.Log.Warn().Ints32("work_partitions", work).Ints32("event_partitions", events).Int("documents", len(items)).
		Msg("duties: the work topic deleted items no worker had read (its retention); their queued documents are dispatched again")
	return nil
}

// sortedSet sorts s and drops repeats.
func sortedSet(s []int32) []int32 {
	slices.Sort(s)
	return slices.Compact(s)
}

// queuedWork is the work item of every queued document that want
// accepts, as the dispatcher made it: the id of the DocumentQueued event
// of the document's current attempt, found in its history.
func (v *Views) queuedWork(want func(*domain.Document) bool) ([]eventstore.WorkItem, error) {
	counts, err := v.DocumentsByStatus()
	if err != nil || counts[domain.StatusQueued] == 0 {
		return nil, err
	}
	var items []eventstore.WorkItem
	err = scan(v.db, []byte("d/"), nil, func(_, val []byte) (bool, error) {
		var doc domain.Document
		if err := decodeView(val, &doc); err != nil {
			return false, err
		}
		if doc.Status != domain.StatusQueued || !want(&doc) {
			return true, nil
		}
		hist, err := v.fullHistory(HistoryDocument, doc.OrgID, doc.ID)
		if err != nil {
			return false, err
		}
		for i := len(hist) - 1; i >= 0; i-- {
			if q, ok := hist[i].Event.(*domain.DocumentQueued); ok && q.Attempt == doc.Attempt {
				items = append(items, workItem(q.Meta.EventID, &doc))
				break
			}
		}
		return true, nil
	})
	return items, err
}

// workItem is the work item that asks a worker for doc's current attempt;
// id is the DocumentQueued event it is dispatched from.
func workItem(id string, doc *domain.Document) eventstore.WorkItem {
	return eventstore.WorkItem{
		ID: id, OrgID: doc.OrgID, DocumentID: doc.ID, Attempt: doc.Attempt,
		Phase: doc.Target, BlobKey: doc.BlobKey, FileName: doc.FileName, ContentType: doc.ContentType,
	}
}
