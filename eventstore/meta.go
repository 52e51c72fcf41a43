package eventstore

import (
	"time"

	"github.com/docket/docket/domain"
)

// NewMeta stamps a new event: a fresh id and the current time, truncated to
// the microsecond precision of the Avro timestamp so that a decoded event
// equals the one that was appended.
func NewMeta(org, actor, correlation string) domain.Meta {
	return domain.Meta{
		EventID:       NewID("evt_"),
		OrgID:         org,
		OccurredAt:    time.Now().UTC().Truncate(time.Microsecond),
		Actor:         actor,
		CorrelationID: correlation,
	}
}
