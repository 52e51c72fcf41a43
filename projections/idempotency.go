package projections

import (
	"github.com/docket/docket/domain"
)

// idempotencyProjection keeps the Idempotency-Key records, so that a retried
// request is answered identically by any node.
type idempotencyProjection struct{}

func (idempotencyProjection) apply(tx *Tx) error {
	var key string
	switch ev := tx.rec.Event.(type) {
	case *domain.IdempotencyKeyClaimed:
		key = ev.Key
	case *domain.IdempotencyKeyCompleted:
		key = ev.Key
	case *domain.IdempotencyKeyReleased:
		key = ev.Key
	default:
		return nil
	}
	k := idemKey(tx.rec.Event.Header().OrgID, key)
	var r domain.Idempotency
	if _, err := tx.get(k, &r); err != nil {
		return err
	}
	r, err := r.Apply(tx.rec.Event)
	if err != nil {
		tx.noop(err)
		return nil
	}
	if r.ClaimID == "" {
		return tx.del(k)
	}
	return tx.put(k, r)
}
