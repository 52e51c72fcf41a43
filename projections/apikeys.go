package projections

import (
	"encoding/json"
	"fmt"

	"github.com/docket/docket/domain"
)

// OrgKeys lists an org's API keys (revoked ones included), by key id.
func (v *Views) OrgKeys(org string) ([]domain.ApiKey, error) {
	var out []domain.ApiKey
	err := scan(v.db, []byte("ko/"+org+"/"), nil, func(k, val []byte) (bool, error) {
		var hash string
		if err := json.Unmarshal(val, &hash); err != nil {
			return false, fmt.Errorf("projections: decode %q: %w", k, err)
		}
		key, err := v.KeyByHash(hash)
		if err != nil {
			return false, err
		}
		out = append(out, key)
		return true, nil
	})
	return out, err
}

// OrgKey returns one of an org's keys by id; another org's key is
// ErrNotFound, exactly like an unknown one.
func (v *Views) OrgKey(org, id string) (domain.ApiKey, error) {
	var hash string
	found, err := getView(v.db, orgAPIKeyKey(org, id), &hash)
	if err != nil {
		return domain.ApiKey{}, err
	}
	if !found {
		return domain.ApiKey{}, ErrNotFound
	}
	k, err := v.KeyByHash(hash)
	if err == nil && k.OrgID != org {
		return domain.ApiKey{}, ErrNotFound
	}
	return k, err
}
