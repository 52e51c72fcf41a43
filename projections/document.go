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
	var before domain.Document
	if _, err := tx.get(docKey(org, id), &before); err != nil {
		return err
	}
	after, err := before.Apply(tx.rec.Event)
	if err != nil {
		if domain.IsNoop(err) {
			tx.noop(err)
			return nil
		}
		return err
	}
	if err := tx.put(docKey(org, id), after); err != nil {
		return err
	}
	if err := (phaseProjection{}).track(tx, before, after); err != nil {
		return err
	}
	tx.doc = &after
	if err := p.batches.track(tx, before, after); err != nil {
		return err
	}
	if err := (endpointProjection{}).documentRun(tx, before, after); err != nil {
		return err
	}
	return p.jobs.track(tx, after)
}
