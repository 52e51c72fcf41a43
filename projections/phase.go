package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
)

// phaseProjection keeps ph/<status>: how many documents (of every org) are
// in each internal status. It exists for /metrics, which then reads a
// handful of keys instead of scanning every document on each scrape, and
// it is folded from the log like every view, so a rebuild reproduces it.
type phaseProjection struct{}

func phaseKey(s domain.Status) []byte { return []byte("ph/" + string(s)) }

// track moves one document from its old status to its new one. The moves
// of a fetch are summed in tx.counts and written once per status at the
// end of the fetch (countDeltas.flush): every event of a fetch moves a
// document, and reading and rewriting a shared count key per event was a
// twelfth of a replay's CPU (BENCHMARKS.md, item 20).
func (phaseProjection) track(tx *Tx, before, after domain.Document) error {
	if before.Status == after.Status {
		return nil
	}
	if before.Status != "" {
		tx.counts[string(phaseKey(before.Status))]--
	}
	tx.counts[string(phaseKey(after.Status))]++
	return nil
}

// countDeltas is one fetch's changes to the ph/ counts, by key.
type countDeltas map[string]int64

// flush adds the fetch's changes to the stored counts, in its batch.
func (c countDeltas) flush(tx *Tx) error {
	for key, delta := range c {
		if delta == 0 {
			continue
		}
		if err := addCount(tx, []byte(key), delta); err != nil {
			return err
		}
	}
	return nil
}

func addCount(tx *Tx, key []byte, delta int64) error {
	var n int64
	val, found, err := tx.getRaw(key)
	if err != nil {
		return err
	}
	if found {
		n = int64(binary.BigEndian.Uint64(val))
	}
	// No key for a count of zero, as after a backfill, so live views and
	// rebuilt or backfilled ones stay byte-identical.
	if n+delta == 0 {
		return tx.del(key)
	}
	out := make([]byte, 8)
	binary.BigEndian.PutUint64(out, uint64(n+delta))
	return tx.set(key, out)
}

// backfillPhases writes the ph/ counts for views made before they existed
// (documents but no counts), from the documents themselves, so an upgraded
// node reports what a rebuild from the log would. It runs in Open, before
// anything is applied.
func backfillPhases(db *pebble.DB) error {
	found := false
	if err := scan(db, []byte("ph/"), nil, func(_, _ []byte) (bool, error) { found = true; return false, nil }); err != nil || found {
		return err
	}
	counts := map[domain.Status]int64{}
	err := scan(db, []byte("d/"), nil, func(_, val []byte) (bool, error) {
		var d domain.Document
		if err := decodeView(val, &d); err != nil {
			return false, err
		}
		counts[d.Status]++
		return true, nil
	})
	if err != nil || len(counts) == 0 {
		return err
	}
	b := db.NewBatch()
	defer b.Close()
	for st, n := range counts {
		out := make([]byte, 8)
		binary.BigEndian.PutUint64(out, uint64(n))
		if err := b.Set(phaseKey(st), out, nil); err != nil {
			return fmt.Errorf("projections: backfill: %w", err)
		}
	}
	return b.Commit(pebble.Sync)
}

// DocumentsByStatus counts documents per internal status, over every org;
// statuses no document is in are absent.
func (v *Views) DocumentsByStatus() (map[domain.Status]int64, error) {
	out := map[domain.Status]int64{}
	err := scan(v.db, []byte("ph/"), nil, func(k, val []byte) (bool, error) {
		out[domain.Status(k[len("ph/"):])] = int64(binary.BigEndian.Uint64(val))
		return true, nil
	})
	return out, err
}
