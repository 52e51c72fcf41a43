package domain

import (
	"fmt"
	"time"
)

// Org is an organisation, the unit of tenancy and of log ordering.
type Org struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// OrgID derives the organisation id from its name. Deriving it makes a
// repeated OrgCreated for one name land on the same key, where the fold
// turns it into a no-op, instead of creating a twin.
func OrgID(name string) string { return "org_" + name }

// ValidateOrgName accepts 1–63 lowercase letters, digits and '-', starting
// with a letter.
func ValidateOrgName(name string) error {
	if name == "" || len(name) > 63 || name[0] < 'a' || name[0] > 'z' {
		return fmt.Errorf("%w: 1 to 63 characters, starting with a lowercase letter", ErrInvalidOrgName)
	}
	for _, r := range name {
		if !(r == '-' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')) {
			return fmt.Errorf("%w: only lowercase letters, digits and '-' are allowed", ErrInvalidOrgName)
		}
	}
	return nil
}

// ApplyOrg folds OrgCreated.
func (o Org) Apply(e *OrgCreated) (Org, error) {
	if o.ID != "" {
		return o, ErrOrgExists
	}
	return Org{ID: e.Meta.OrgID, Name: e.Name, CreatedAt: e.Meta.OccurredAt}, nil
}

// ApiKey is an issued key. The secret itself is never stored.
type ApiKey struct {
	ID      string
	OrgID   string
	Hash    string
	Label   string
	Revoked bool
}

// Apply folds ApiKeyIssued and ApiKeyRevoked.
func (k ApiKey) Apply(e Event) (ApiKey, error) {
	switch ev := e.(type) {
	case *ApiKeyIssued:
		if k.ID != "" {
			return k, fmt.Errorf("%w: %s", ErrKeyExists, ev.KeyID)
		}
		return ApiKey{ID: ev.KeyID, OrgID: ev.Meta.OrgID, Hash: ev.KeyHash, Label: ev.Label}, nil
	case *ApiKeyRevoked:
		if k.ID == "" || k.Revoked || k.OrgID != ev.Meta.OrgID {
			return k, ErrUnknownKey
		}
		k.Revoked = true
		return k, nil
	}
	return k, ErrUnknownKey
}
