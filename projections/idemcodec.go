package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/docket/docket/domain"
)

// An Idempotency-Key record is written twice for every request that
// carries a key (claimed, then completed with the response it replays),
// and the response body went through JSON's base64: on the 1M-event
// replay's log this projection was 7 % of the apply path, more than half
// of it JSON. So it is
// encoded like the document view (doccodec.go): after a version byte, the
// fields in declaration order,
//
//	Key, RequestHash, ClaimID   strings
//	ClaimedAt                   time
//	Completed                   bool
//	Status                      zig-zag varint
//	Body                        0 (nil), or uvarint length+1 and the bytes
//
// Views in an older layout (JSON records) are rebuilt from the log
// (historyFormat). TestIdempotencyCodecCoversEveryField fails when a
// field is added to domain.Idempotency without it.
const idemCodecVersion = 1

func encodeIdempotency(r *domain.Idempotency) []byte {
	b := make([]byte, 0, 64+len(r.Key)+len(r.RequestHash)+len(r.ClaimID)+len(r.Body))
	b = append(b, idemCodecVersion)
	b = appendStrings(b, r.Key, r.RequestHash, r.ClaimID)
	b = appendTimes(b, r.ClaimedAt)
	b = appendBool(b, r.Completed)
	b = binary.AppendVarint(b, int64(r.Status))
	return append(appendCount(b, len(r.Body), r.Body == nil), r.Body...)
}

func decodeIdempotency(val []byte, r *domain.Idempotency) error {
	d := docReader{b: val}
	if v := d.byte(); v != idemCodecVersion {
		return fmt.Errorf("%w: idempotency record version %d", errViewCodec, v)
	}
	*r = domain.Idempotency{Key: d.str(), RequestHash: d.str(), ClaimID: d.str()}
	r.ClaimedAt = d.time()
	r.Completed = d.bool()
	r.Status = int(d.varint())
	r.Body = d.bytes()
	return d.finish()
}
