package projections

import (
	"testing"

	"github.com/docket/docket/domain"
)

// TestIdempotencyCodecCoversEveryField round-trips a record with every
// field set, so a field added to domain.Idempotency without the codec
// fails here; and a claim, which has no body yet.
func TestIdempotencyCodecCoversEveryField(t *testing.T) {
	t.Parallel()
	claim := domain.Idempotency{Key: "k", RequestHash: "h", ClaimID: "c"}
	roundTrips(t, encodeIdempotency, decodeIdempotency, filled[domain.Idempotency](), claim,
		domain.Idempotency{Key: "k", ClaimID: "c", Completed: true, Status: 204, Body: []byte{}})
}

// TestIdempotencyCodecReadsWhatJSONRead: the views held these records as
// JSON until layout 5; what a record read back as then, it reads back as
// now (a nil and an empty body included: JSON's null and "").
func TestIdempotencyCodecReadsWhatJSONRead(t *testing.T) {
	t.Parallel()
	readsWhatJSONRead(t, func(r domain.Idempotency) string { return r.Key },
		filled[domain.Idempotency](), domain.Idempotency{Key: "nil"}, domain.Idempotency{Key: "empty", Body: []byte{}})
}

// TestIdempotencyCodecRefusesBrokenValues: truncations, bytes left over
// and an unknown version are errors.
func TestIdempotencyCodecRefusesBrokenValues(t *testing.T) {
	t.Parallel()
	r := filled[domain.Idempotency]()
	refusesBroken(t, encodeIdempotency(&r), func(val []byte) error { return decodeIdempotency(val, &domain.Idempotency{}) })
}

// FuzzIdempotencyCodec: whatever the bytes, decoding returns a record or
// an error, and one it returns reads back the same after encoding it
// again.
func FuzzIdempotencyCodec(f *testing.F) {
	r := filled[domain.Idempotency]()
	f.Add(encodeIdempotency(&r))
	f.Add(encodeIdempotency(&domain.Idempotency{Key: "k", Body: []byte{}}))
	fuzzReadsBack(f, encodeIdempotency, decodeIdempotency)
}
