package eventstore

import "errors"

// Sentinel errors of the eventstore package. Callers test them with
// errors.Is; the package wraps them with detail using fmt.Errorf("...: %w").
var (
	// ErrUnknownEvent: the event's type has no schema, or the Go value is
	// not the catalogue's type for that name.
	ErrUnknownEvent = errors.New("eventstore: unknown event type")
	// ErrBadEncoding: the bytes are not Avro single-object encoded (shorter
	// than the 10-byte header, or without the C3 01 marker).
	ErrBadEncoding = errors.New("eventstore: not single-object encoded")
	// ErrUnknownFingerprint: the header names a writer schema this codec
	// does not know.
	ErrUnknownFingerprint = errors.New("eventstore: unknown schema fingerprint")
	// ErrMalformedBody: the header is valid but the Avro body does not decode
	// with the writer schema (truncated, corrupt, or followed by extra bytes).
	ErrMalformedBody = errors.New("eventstore: malformed event body")
	// ErrTooLarge: Encode refused an event beyond MaxEncodedSize or
	// MaxArrayLen, which Decode would refuse too; or Append's producer or
	// broker refused its record as larger than a message may be. Sending
	// it again fails again.
	ErrTooLarge = errors.New("eventstore: event too large")
)

// ErrUnavailable: the brokers did not accept or serve a request in time.
// Appends that fail with it may be retried: the producer is idempotent.
var ErrUnavailable = errors.New("eventstore: kafka unavailable")

// IsRetryable reports whether an operation that failed with err may succeed
// if repeated unchanged.
func IsRetryable(err error) bool { return errors.Is(err, ErrUnavailable) }

// ErrRegistryRefused: the schema registry answered a registration with a
// refusal that asking again did not mend, e.g. a schema the subject's
// compatibility level does not allow (409). Unlike ErrUnavailable it needs
// an operator: the subject's versions or compatibility, or the registry's
// credentials, must change first.
var ErrRegistryRefused = errors.New("eventstore: schema registry refused")

// ErrInvalidOption: Open was given an option value it cannot work with.
var ErrInvalidOption = errors.New("eventstore: invalid option")

// ErrNoTopic: a ReadOnly store found no event topic (wrong brokers or
// --topic-prefix).
var ErrNoTopic = errors.New("eventstore: event topic does not exist")

// ErrLayout: a topic has fewer partitions than the layout topic recorded
// for it, which Kafka never does to a topic; the layout is not this
// topic's.
var ErrLayout = errors.New("eventstore: topic does not match its recorded layout")

// ErrLogTruncated: the log no longer holds offsets a reader needs: records
// were deleted (a retention or compaction the event topic should not
// have, or DeleteRecords), or the reader's offsets come from a longer log.
// A fold that went on would silently lack events.
var ErrLogTruncated = errors.New("eventstore: the log does not hold the offsets to read")
