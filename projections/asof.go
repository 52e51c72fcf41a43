package projections

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// At returns views that hold an entity of org as it was at asOf: fresh
// in-memory views into which the entity's history has been applied by the
// same projections (and so the same domain folds) as the live views. Query
// them like the live ones (Document, Batch, Job) and Close them after use.
//
// "As it was at asOf" is the state after the entity's events, in log order,
// up to but not including the first whose meta.occurred_at is later than
// asOf. With one clock that is every event that occurred at or before asOf
// (the store never appends a stamp older than its partition's latest);
// with several producers' clocks it is still a state the entity really had,
// since it is always a prefix of the log. An entity that did not exist then
// is simply absent from the returned views (ErrNotFound on lookup).
//
// A job's documents take part with their whole history, because a job
// adopts the state its documents had when it was created. Webhook
// registrations and deliveries of other entities are not replayed, so the
// returned views hold no delivery state worth showing.
func (v *Views) At(kind HistoryKind, org, id string, asOf time.Time) (*Views, error) {
	events, err := v.fullHistory(kind, org, id)
	if err != nil {
		return nil, err
	}
	if kind == HistoryJob {
		hs := [][]HistoryEntry{events}
		for _, doc := range jobDocuments(events) {
			h, err := v.fullHistory(HistoryDocument, org, doc)
			if err != nil {
				return nil, err
			}
			hs = append(hs, h)
		}
		events = mergeHistories(hs...)
	}
	recs := make([]eventstore.Record, 0, len(events))
	for _, e := range events {
		if e.Event.Header().OccurredAt.After(asOf) {
			break
		}
		recs = append(recs, eventstore.Record{Position: e.Position, Timestamp: e.Event.Header().OccurredAt, Event: e.Event})
	}
	past, err := open("/", vfs.NewMem(), []Option{WithoutWAL(), func(v *Views) { v.ephemeral = true }})
	if err != nil {
		return nil, err
	}
	past.noHistory = true
	if err := past.ApplyRecords(recs); err != nil {
		past.Close()
		return nil, err
	}
	return past, nil
}

// jobDocuments lists the documents a job's events name, first seen first.
func jobDocuments(events []HistoryEntry) []string {
	var out []string
	seen := map[string]bool{}
	add := func(ids []string) {
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	for _, e := range events {
		switch ev := e.Event.(type) {
		case *domain.JobCreated:
			add(ev.DocumentIDs)
		case *domain.JobReopened:
			add(ev.DocumentIDs)
		}
	}
	return out
}
