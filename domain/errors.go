package domain

import "errors"

// Sentinels for transitions the fold refuses. Each is a recorded no-op when
// met in the log, and a clear client error when a command check finds it first.
var (
	ErrUnknownDocument  = errors.New("domain: unknown document")
	ErrDocumentExists   = errors.New("domain: document already exists")
	ErrStaleAttempt     = errors.New("domain: event is for another attempt")
	ErrAlreadyQueued    = errors.New("domain: document is already queued or running")
	ErrAlreadyDone      = errors.New("domain: document already processed")
	ErrDuplicateClaim   = errors.New("domain: claim already recorded")
	ErrNotClaimable     = errors.New("domain: document is not waiting for a worker")
	ErrFencedClaim      = errors.New("domain: result from a claim that is not current")
	ErrWrongPhase       = errors.New("domain: result does not match the running phase")
	ErrAlreadyStarted   = errors.New("domain: document has already started")
	ErrDocumentCanceled = errors.New("domain: document was canceled")
	ErrBatchDeleted     = errors.New("domain: batch was deleted")
	ErrInvalidBatchName = errors.New("domain: invalid batch name")
	ErrInvalidReference = errors.New("domain: invalid reference")
	ErrInvalidOrgName   = errors.New("domain: invalid organisation name")
	ErrOrgExists        = errors.New("domain: organisation already exists")
	ErrKeyExists        = errors.New("domain: api key already exists")
	ErrUnknownKey       = errors.New("domain: unknown or revoked api key")
	ErrIdempotencyTaken = errors.New("domain: idempotency key already claimed")
	ErrJobExists        = errors.New("domain: job already exists")
	ErrUnknownJob       = errors.New("domain: unknown job")
	ErrJobTerminal      = errors.New("domain: job already finished or cancelling")
	ErrJobNotReopenable = errors.New("domain: job cannot be reopened")
	ErrJobNotDone       = errors.New("domain: job outcome does not match its rows")
	ErrStaleDelivery    = errors.New("domain: delivery attempt does not follow the last one")
	ErrNotClaimHolder   = errors.New("domain: idempotency key held by another claim")
	ErrInvalidResult    = errors.New("domain: result has a line item that is not a finite number")
)

var noops = []error{
	ErrUnknownDocument, ErrDocumentExists, ErrStaleAttempt, ErrAlreadyQueued,
	ErrAlreadyDone, ErrDuplicateClaim, ErrNotClaimable, ErrFencedClaim,
	ErrWrongPhase, ErrAlreadyStarted, ErrDocumentCanceled, ErrBatchDeleted,
	ErrOrgExists, ErrKeyExists, ErrUnknownKey, ErrIdempotencyTaken,
	ErrJobExists, ErrUnknownJob, ErrJobTerminal, ErrJobNotReopenable, ErrJobNotDone,
	ErrStaleDelivery, ErrNotClaimHolder, ErrInvalidResult,
}

// IsNoop reports whether err is the fold refusing an event. Such an event stays
// in the log and changes nothing, identically on every node.
func IsNoop(err error) bool {
	for _, n := range noops {
		if errors.Is(err, n) {
			return true
		}
	}
	return false
}

// IsConflict reports whether a command was refused because of the state it
// met, as opposed to malformed input.
func IsConflict(err error) bool {
	return IsNoop(err) && !errors.Is(err, ErrUnknownDocument)
}

// IsInvalid reports whether a command carries malformed input.
func IsInvalid(err error) bool {
	return errors.Is(err, ErrInvalidBatchName) || errors.Is(err, ErrInvalidReference) ||
		errors.Is(err, ErrInvalidOrgName)
}
