package projections

import (
	"github.com/docket/docket/domain"
)

// documentProjection maintains d/<org>/<doc> and, through the batch
// projection, every batch a document belongs to.
type documentProjection struct {
	batches *batchProjection
	jobs    *jobProjection
}

func (p documentProjection) apply(tx *Tx) error {
	id := domain.DocumentIDOf(tx.rec.Event)
	if id == "" {
		return nil
	}
	org := tx.rec.Event.Header().OrgID
	key := docKey(org, id)
	var before domain.Document
	if stored, err := getShared[domain.Document](tx, key); err != nil {
		return err
	} else if stored != nil {
		before = *stored
	}
	after, err := before.Apply(tx.rec.Event)
	if err != nil {
		if domain.IsNoop(err) {
			tx.noop(err)
			return nil
		}
		return err
	}
	// One copy on the heap, shared by the fetch, the cache and the history
	// projection; nothing changes it from here on.
	tx.doc = &after
	if err := putShared(tx, key, tx.doc); err != nil {
		return err
	}
	if err := (phaseProjection{}).track(tx, before, after); err != nil {
		return err
	}
	if err := p.batches.track(tx, before, after); err != nil {
		return err
	}
	if err := (endpointProjection{}).documentRun(tx, before, after); err != nil {
		return err
	}
	return p.jobs.track(tx, after)
}
