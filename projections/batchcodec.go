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
//	Counts             uvarint count+1 (0 was a nil map, before the counts
//	                   were an array), then for each status with a count
//	                   other than 0, in the order of its name, the status
//	                   (string) and the count (varint)
//	CreatedAt, StartedAt, CompletedAt   times
//
// The entries are in a fixed order so that a rebuild writes the same bytes
// as the live fold (invariant 4); it is the order of the names, in which
// the counts were written when they were a map, so views written before
// read back the same. TestBatchCodecCoversEveryField
// fails when a field is added to domain.Batch without it.
const batchCodecVersion = 1

func encodeBatch(bt *domain.Batch) []byte { return appendBatch(make([]byte, 0, 96), bt) }

// appendBatch appends bt's encoding to b.
func appendBatch(b []byte, bt *domain.Batch) []byte {
	b = append(b, batchCodecVersion)
	b = appendStrings(b, bt.OrgID, bt.Name)
	b = binary.AppendVarint(b, int64(bt.Documents))
	n := 0
	for _, c := range bt.Counts {
		if c != 0 {
			n++
		}
	}
	b = appendCount(b, n, false)
	for _, p := range countsOrder {
		if c := bt.Counts.Of(p); c != 0 {
			b = appendStrings(b, string(p))
			b = binary.AppendVarint(b, int64(c))
		}
	}
	return appendTimes(b, bt.CreatedAt, bt.StartedAt, bt.CompletedAt)
}

// countsOrder is the statuses in the order of their names.
var countsOrder = func() []domain.Public {
	ps := slices.Clone(domain.PublicStatuses)
	slices.Sort(ps)
	return ps
}()

func decodeBatch(val []byte, bt *domain.Batch) error {
	r := docReader{b: val}
	if v := r.byte(); v != batchCodecVersion {
		return fmt.Errorf("%w: batch version %d", errViewCodec, v)
	}
	*bt = domain.Batch{OrgID: r.str(), Name: r.str(), Documents: int(r.varint())}
	for range max(r.count(), 0) {
		k, c := domain.Public(r.str()), int(r.varint())
		if r.err == nil && !bt.Counts.Set(k, c) {
			return fmt.Errorf("%w: batch count of status %q", errViewCodec, k)
		}
	}
	bt.CreatedAt, bt.StartedAt, bt.CompletedAt = r.time(), r.time(), r.time()
	return r.finish()
}
