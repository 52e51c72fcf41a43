package projections

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/docket/docket/domain"
)

// The batch view is rewritten by every event of each of its documents, so
// it is encoded like the document view (doccodec.go) rather than in JSON,
// which was most of the cost of encoding views once documents had their
// own encoding. After a version byte:
//
//	OrgID, Name        strings
//	Documents          zig-zag varint
//	Counts             0 (nil), or uvarint count+1, then per entry in key
//	                   order the status (string) and the count (varint)
//	CreatedAt, StartedAt, CompletedAt   times
//
// The entries are written in key order so that a rebuild writes the same
// bytes as the live fold (invariant 4). TestBatchCodecCoversEveryField
// fails when a field is added to domain.Batch without it.
const batchCodecVersion = 1

func encodeBatch(bt *domain.Batch) []byte {
	b := make([]byte, 0, 96)
	b = append(b, batchCodecVersion)
	b = appendStrings(b, bt.OrgID, bt.Name)
	b = binary.AppendVarint(b, int64(bt.Documents))
	b = appendCount(b, len(bt.Counts), bt.Counts == nil)
	keys := make([]domain.Public, 0, len(bt.Counts))
	for k := range bt.Counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendStrings(b, string(k))
		b = binary.AppendVarint(b, int64(bt.Counts[k]))
	}
	return appendTimes(b, bt.CreatedAt, bt.StartedAt, bt.CompletedAt)
}

func decodeBatch(val []byte, bt *domain.Batch) error {
	r := docReader{b: val}
	if v := r.byte(); v != batchCodecVersion {
		return fmt.Errorf("%w: batch version %d", errViewCodec, v)
	}
	*bt = domain.Batch{OrgID: r.str(), Name: r.str(), Documents: int(r.varint())}
	if n := r.count(); n >= 0 {
		bt.Counts = make(map[domain.Public]int, n)
		for range n {
			k := domain.Public(r.str())
			bt.Counts[k] = int(r.varint())
		}
	}
	bt.CreatedAt, bt.StartedAt, bt.CompletedAt = r.time(), r.time(), r.time()
	return r.finish()
}
