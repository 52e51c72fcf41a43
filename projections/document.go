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
	// The stored value is shared and never changed in place (cache.go), so
	// the fold reads it where it is.
	var none domain.Document
	before := &none
	if stored, err := getShared[domain.Document](tx, key); err != nil {
		return err
	} else if stored != nil {
		before = stored
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
	// The projections below take the documents by pointer and must not
	// change them: copying a document (400 bytes) to each of them was most
	// of the fold's memmove.
	if err := (phaseProjection{}).track(tx, before, tx.doc); err != nil {
		return err
	}
	if err := p.batches.track(tx, before, tx.doc); err != nil {
		return err
	}
	if err := (endpointProjection{}).documentRun(tx, before, tx.doc); err != nil {
		return err
	}
	return p.jobs.track(tx, tx.doc)
}
