package projections

import (
	"encoding/binary"
	"fmt"
	"maps"

	"github.com/docket/docket/eventstore"
)

// fold applies recs to a new batch, reading through prev (the fetch
// before, still committing, or nil), and hands back the batch ready to
// commit: nil when recs held nothing new. It leaves the apply goroutine's
// caches as they will be once the batch commits (forget undoes that if it
// does not).
func (v *Views) fold(recs []eventstore.Record, prev *staged) (*staged, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	var next map[int32]int64
	if prev != nil {
		next = maps.Clone(prev.next)
	} else {
		next = v.Offsets()
	}
	touched := map[int32]bool{}
	from := maps.Clone(next) // the history's spans (historyLog.spans)
	// Its own array, since listeners keep it; sized once, as a fetch is
	// usually applied whole (growing it was a sixth of the fold's
	// allocations).
	applied := make([]eventstore.Record, 0, len(recs))
	written, objects, history, counts, due := map[string][]byte{}, fetchObjects{}, newHistoryLog(len(recs)), countDeltas{}, map[int32]int64{}
	endpointsWritten := map[string]bool{}
	// The history's copies of the events, most of a fetch's bytes, are
	// written into the batch as it commits (historyLog.write), after the
	// fold: a fetch that needs its batch indexed (fetchBatch) neither
	// copies nor indexes them, and they commit with the index entries that
	// name them and the offsets, all or nothing.
	fb := newFetchBatch(v.db, v.batchHint)
	fb.prev = prev
	ok := false
	defer func() {
		if !ok {
			fb.close()
		}
	}()
	for _, rec := range recs {
		if rec.Offset < next[rec.Partition] {
			continue
		}
		applied = append(applied, rec)
		if rec.Err != nil {
			v.log.Error().Err(rec.Err).Int32("partition", rec.Partition).Int64("offset", rec.Offset).Msg("projections: undecodable event skipped")
		} else if err := v.applyOne(&Tx{fb: fb, rec: rec, recIndex: len(applied) - 1, views: v, written: written, objects: objects, history: history, counts: counts, due: due, endpointsWritten: endpointsWritten}); err != nil {
			return nil, fmt.Errorf("projections: apply %s at %d/%d: %w", rec.Event.Type(), rec.Partition, rec.Offset, err)
		}
		next[rec.Partition] = rec.Offset + 1
		touched[rec.Partition] = true
	}
	if len(applied) == 0 {
		return nil, nil
	}
	dirty := objects.dirty(v.written)
	wroteCounts, err := counts.flush(&Tx{fb: fb, views: v, written: written}, v.counts)
	if err != nil {
		return nil, err
	}
	b := fb.b // the fold is done: nothing asks for an index now
	if b.Indexed() {
		v.indexedFetches++
	}
	for p := range touched {
		history.spans[p] = offsetSpan{from: from[p], to: next[p]}
		val := make([]byte, 8)
		binary.BigEndian.PutUint64(val, uint64(next[p]))
		if err := b.Set(offsetKey(p), val, nil); err != nil {
			return nil, fmt.Errorf("projections: offset: %w", err)
		}
	}
	v.cache.commit(objects)
	v.counts.commit(wroteCounts)
	ok = true
	fb.prev = nil
	prev.release()
	return &staged{fb: fb, applied: applied, next: next, touched: touched, written: written, objects: objects,
		endpointsWritten: endpointsWritten, due: due, dirty: dirty, history: history}, nil
}
