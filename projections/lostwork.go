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
// whose work items were deleted before a worker read them, until ctx
// ends: by the topic's retention (eventstore.Store.LostWork), or with the
// whole topic, deleted and created again (Store.WorkTopicReplaced). Their
// DocumentQueued events were dispatched and committed long ago, so nothing
// else ever would: the documents would stay queued for good. A document
// dispatched twice costs a second run at most (claims are fenced, DESIGN
// invariant 3).
func (d *Dispatcher) watchLostWork(ctx context.Context) {
	every := d.LostWorkCheck
	if every <= 0 {
		every = DefaultLostWorkCheck
	}
	t := time.NewTicker(every)
	defer t.Stop()
	handled := newLostHandled()
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

// lostHandled is what one node has made good. pairs is where each work
// partition started when its loss was last made good for the documents
// of one event partition: the workers' offsets stay below it until they
// run again, and every check until then would dispatch the same documents
// again. It is kept per event partition because a node makes good only
// the ones it owns at the time: one that checks in a rebalance, owning
// few or none, must still make good the others once it owns them.
// replaced holds the event partitions whose documents were dispatched
// again after the work topic was deleted and created again.
type lostHandled struct {
	pairs    map[lostPair]int64
	replaced map[int32]bool
}

func newLostHandled() *lostHandled {
	return &lostHandled{pairs: map[lostPair]int64{}, replaced: map[int32]bool{}}
}

type lostPair struct{ work, events int32 }

// replacedSkew widens "dispatched before the work topic was created
// again" by the clock skew two nodes may have: a document queued up to
// this long after the new topic's layout was recorded is dispatched again
// too. A document dispatched twice costs a second run at most.
const replacedSkew = time.Minute

// recoverLostWork does one check of watchLostWork for the documents of
// the event partitions in owned.
func (d *Dispatcher) recoverLostWork(ctx context.Context, handled *lostHandled, owned []int32) error {
	lost, err := d.Store.LostWork(ctx)
	if err != nil {
		return err
	}
	todo := map[lostPair]int64{}
	for q, start := range lost {
		for _, p := range owned {
			if pair := (lostPair{q, p}); handled.pairs[pair] < start {
				todo[pair] = start
			}
		}
	}
	since, replaced := d.Store.WorkTopicReplaced()
	var fresh []int32 // owned, not made good since the work topic was replaced
	if replaced {
		for _, p := range owned {
			if !handled.replaced[p] {
				fresh = append(fresh, p)
			}
		}
	}
	if len(todo) == 0 && len(fresh) == 0 {
		return nil
	}
	if err := d.viewsHoldTheLog(ctx); err != nil {
		return err
	}
	var nLost, nReplaced int
	items, err := d.Views.queuedWork(func(doc *domain.Document) bool {
		p := d.Store.PartitionFor(doc.OrgID)
		_, gone := todo[lostPair{d.Store.WorkPartitionFor(doc.ID), p}]
		return gone || slices.Contains(fresh, p)
	}, func(doc *domain.Document, q *domain.DocumentQueued) bool {
		p := d.Store.PartitionFor(doc.OrgID)
		if _, gone := todo[lostPair{d.Store.WorkPartitionFor(doc.ID), p}]; gone {
			nLost++
			return true
		}
		if q.Meta.OccurredAt.Before(since.Add(replacedSkew)) {
			nReplaced++
			return true
		}
		return false
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
		handled.pairs[pair] = start
		work, events = append(work, pair.work), append(events, pair.events)
	}
	for _, p := range fresh {
		handled.replaced[p] = true
	}
	if len(todo) > 0 {
		d.Log.Warn().Ints32("work_partitions", sortedSet(work)).Ints32("event_partitions", sortedSet(events)).Int("documents", nLost).
			Msg("duties: the work topic deleted items no worker had read (its retention); their queued documents are dispatched again")
	}
	if len(fresh) > 0 {
		d.Log.Warn().Time("work_topic_since", since).Ints32("event_partitions", fresh).Int("documents", nReplaced).
			Msg("duties: the work topic was deleted and created again; documents queued before then are dispatched again")
	}
	return nil
}

// viewsHoldTheLog waits until the views have applied every event the log
// held when it was called. The check reads the queued documents from the
// views: a node that has just started, rebuilding them, would otherwise
// miss documents queued long ago, and record their loss as made good.
func (d *Dispatcher) viewsHoldTheLog(ctx context.Context) error {
	ends, err := d.Store.EndOffsets(ctx)
	if err != nil {
		return err
	}
	var last []eventstore.Position
	for p, end := range ends {
		if end > 0 {
			last = append(last, eventstore.Position{Partition: p, Offset: end - 1})
		}
	}
	return d.Views.WaitAll(ctx, last)
}

// sortedSet sorts s and drops repeats.
func sortedSet(s []int32) []int32 {
	slices.Sort(s)
	return slices.Compact(s)
}

// queuedWork is the work item of every queued document that want
// accepts and then, seeing the DocumentQueued event of its current
// attempt (found in its history), keep accepts (nil: all), as the
// dispatcher made it.
func (v *Views) queuedWork(want func(*domain.Document) bool, keep func(*domain.Document, *domain.DocumentQueued) bool) ([]eventstore.WorkItem, error) {
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
				if keep == nil || keep(&doc, q) {
					items = append(items, workItem(q.Meta.EventID, &doc))
				}
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
