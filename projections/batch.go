package projections

import (
	"fmt"

	"github.com/docket/docket/domain"
)

// batchProjection maintains b/<org>/<batch> incrementally from document
// transitions, and the bd/ membership index used for results and recompute.
type batchProjection struct{}

// track folds one document transition into the document's batch.
func (batchProjection) track(tx *Tx, before, after *domain.Document) error {
	if after.BatchName == "" || before.BatchDeleted {
		return nil
	}
	org, name := after.OrgID, after.BatchName
	key := batchKey(org, name)
	stored, err := getShared[domain.Batch](tx, key)
	if err != nil {
		return err
	}
	var b domain.Batch
	if stored != nil {
		b = *stored
	} else {
		b = domain.NewBatch(org, name)
	}
	if before.Status == "" {
		if err := tx.set(memberKey(org, name, tx.rec.Offset, after.ID), nil); err != nil {
			return fmt.Errorf("projections: index: %w", err)
		}
	}
	wasDone := b.AllDone()
	b, recompute := b.Track(*before, *after)
	if recompute {
		docs, err := batchDocuments(tx, org, name)
		if err != nil {
			return err
		}
		b = domain.Summarize(org, name, docs)
	}
	if !wasDone && b.AllDone() {
		if err := (webhookProjection{}).batchDone(tx, b); err != nil {
			return err
		}
	}
	return putShared(tx, key, &b)
}

// deleteBatch folds BatchDeleted into every document of the batch and drops
// the batch view; the documents stay readable by id.
func (p batchProjection) deleteBatch(tx *Tx, ev *domain.BatchDeleted) error {
	org := ev.Meta.OrgID
	found, err := tx.get(batchKey(org, ev.BatchName), &domain.Batch{})
	if err != nil {
		return err
	}
	if !found {
		tx.noop(domain.ErrBatchDeleted)
		return nil
	}
	prefix := memberPrefix(org, ev.BatchName)
	var keys [][]byte
	var ids []string
	err = tx.scan(prefix, nil, func(k, _ []byte) (bool, error) {
		keys = append(keys, append([]byte(nil), k...))
		ids = append(ids, memberDoc(k))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		var d domain.Document
		if _, err := tx.get(docKey(org, id), &d); err != nil {
			return err
		}
		after, err := d.Apply(ev)
		if err != nil {
			continue // not this batch's document any more; nothing to do
		}
		if err := tx.put(docKey(org, id), after); err != nil {
			return err
		}
		if err := (phaseProjection{}).track(tx, &d, &after); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := tx.del(k); err != nil {
			return err
		}
	}
	if err := tx.del(batchHookKey(org, ev.BatchName)); err != nil {
		return err
	}
	return tx.del(batchKey(org, ev.BatchName))
}

func memberDoc(k []byte) string {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '/' {
			return string(k[i+1:])
		}
	}
	return string(k)
}

// batchDocuments loads every current document of a batch, in upload order.
func batchDocuments(tx *Tx, org, name string) ([]domain.Document, error) {
	var docs []domain.Document
	err := tx.scan(memberPrefix(org, name), nil, func(k, _ []byte) (bool, error) {
		var d domain.Document
		if _, err := tx.get(docKey(org, memberDoc(k)), &d); err != nil {
			return false, err
		}
		docs = append(docs, d)
		return true, nil
	})
	return docs, err
}
