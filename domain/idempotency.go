package domain

import "time"

// Idempotency windows. A claim whose request never completed (its node died)
// can be taken over after IdempotencyClaimTimeout; a completed key is
// remembered for IdempotencyRetention. Both are measured between event
// times, so every node agrees.
const (
	IdempotencyClaimTimeout = time.Minute
	IdempotencyRetention    = 24 * time.Hour
)

// Idempotency is the state of one Idempotency-Key of one org.
type Idempotency struct {
	Key         string
	RequestHash string
	ClaimID     string
	ClaimedAt   time.Time
	Completed   bool
	Status      int
	Body        []byte
}

// Apply folds the idempotency events. The first claim in log order wins.
func (r Idempotency) Apply(e Event) (Idempotency, error) {
	at := e.Header().OccurredAt
	switch ev := e.(type) {
	case *IdempotencyKeyClaimed:
		if r.ClaimID != "" && !r.expired(at) {
			return r, ErrIdempotencyTaken
		}
		return Idempotency{Key: ev.Key, RequestHash: ev.RequestHash, ClaimID: ev.ClaimID, ClaimedAt: at}, nil
	case *IdempotencyKeyCompleted:
		if ev.ClaimID == "" || ev.ClaimID != r.ClaimID || r.Completed {
			return r, ErrNotClaimHolder
		}
		r.Completed, r.Status, r.Body = true, ev.Status, append([]byte(nil), ev.Body...)
		return r, nil
	case *IdempotencyKeyReleased:
		if ev.ClaimID == "" || ev.ClaimID != r.ClaimID || r.Completed {
			return r, ErrNotClaimHolder
		}
		return Idempotency{}, nil
	}
	return r, ErrNotClaimHolder
}

func (r Idempotency) expired(at time.Time) bool {
	if r.Completed {
		return at.Sub(r.ClaimedAt) > IdempotencyRetention
	}
	return at.Sub(r.ClaimedAt) > IdempotencyClaimTimeout
}

// Verdict is what a handler does with a request that carries a key.
type Verdict int

// Verdicts of Idempotency.Check.
const (
	VerdictProceed    Verdict = iota // key free: claim it and run
	VerdictReplay                    // same request completed: send the stored response
	VerdictMismatch                  // key used for a different request: 422
	VerdictInProgress                // same key still running elsewhere: 409
)

// Check decides, at time now, what a request with hash should do.
func (r Idempotency) Check(hash string, now time.Time) Verdict {
	switch {
	case r.ClaimID == "" || r.expired(now):
		return VerdictProceed
	case r.RequestHash != hash:
		return VerdictMismatch
	case r.Completed:
		return VerdictReplay
	}
	return VerdictInProgress
}
