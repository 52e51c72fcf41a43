package projections

import (
	"github.com/docket/docket/domain"
)

// orgProjection maintains organisations and API keys (by hash, so that a
// presented key is found without ever storing it).
type orgProjection struct{}

func (orgProjection) apply(tx *Tx) error {
	switch ev := tx.rec.Event.(type) {
	case *domain.OrgCreated:
		var o domain.Org
		if _, err := tx.get(orgKey(ev.Meta.OrgID), &o); err != nil {
			return err
		}
		o, err := o.Apply(ev)
		if err != nil {
			tx.noop(err)
			return nil
		}
		return tx.put(orgKey(o.ID), o)
	case *domain.ApiKeyIssued:
		var existing string
		if found, err := tx.get(apiKeyIDKey(ev.KeyID), &existing); err != nil || found {
			if found {
				tx.noop(domain.ErrKeyExists)
			}
			return err
		}
		return applyKey(tx, ev.KeyHash, ev)
	case *domain.ApiKeyRevoked:
		var hash string
		if _, err := tx.get(apiKeyIDKey(ev.KeyID), &hash); err != nil {
			return err
		}
		return applyKey(tx, hash, ev)
	}
	return nil
}

func applyKey(tx *Tx, hash string, e domain.Event) error {
	var k domain.ApiKey
	if hash != "" {
		if _, err := tx.get(apiKeyKey(hash), &k); err != nil {
			return err
		}
	}
	k, err := k.Apply(e)
	if err != nil {
		tx.noop(err)
		return nil
	}
	if err := tx.put(apiKeyIDKey(k.ID), k.Hash); err != nil {
		return err
	}
	// The org index lets an org list and revoke its keys by id.
	if err := tx.put(orgAPIKeyKey(k.OrgID, k.ID), k.Hash); err != nil {
		return err
	}
	return tx.put(apiKeyKey(k.Hash), k)
}
