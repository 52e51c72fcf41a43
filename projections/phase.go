package projections

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/docket/docket/domain"
)

// phaseProjection keeps ph/<status>: how many documents (of every org) are
// in each internal status. It exists for /metrics, which then reads a
// handful of keys instead of scanning every document on each scrape, and
// it is folded from the log like every view, so a rebuild reproduces it.
type phaseProjection struct{}

func phaseKey(s domain.Status) []byte { return []byte("ph/" + string(s)) }

// isCountKey reports whether key is a count's. A fetch reads a count
// (countDeltas.flush) before it writes it, and writes it once.
func isCountKey(key []byte) bool { return bytes.HasPrefix(key, []byte("ph/")) }

// track moves one document from its old status to its new one. The moves
// of a fetch are summed in tx.counts and written once per status at the
// end of the fetch (countDeltas.flush): every event of a fetch moves a
// document, and reading and rewriting a shared count key per event was a
// twelfth of a replay's CPU (BENCHMARKS.md, item 20).
func (phaseProjection) track(tx *Tx, before, after *domain.Document) error {
	if before.Status == after.Status {
		return nil
	}
	if before.Status != "" {
		tx.counts[before.Status]--
	}
	tx.counts[after.Status]++
	return nil
}

// countDeltas is one fetch's changes to the ph/ counts, by status: the
// statuses are strings already, where keys made per event were a twentieth
// of what the fold allocated.
type countDeltas map[domain.Status]int64

// flush adds the fetch's changes to the counts, in its batch, and returns
// the counts it wrote, for known once the batch commits.
func (c countDeltas) flush(tx *Tx, known phaseCounts) (phaseCounts, error) {
	var wrote phaseCounts
	for st, delta := range c {
		if delta == 0 {
			continue
		}
		key := string(phaseKey(st))
		n, err := known.read(tx, key)
		if err != nil {
			return nil, err
		}
		n += delta
		if err := writeCount(tx, []byte(key), n); err != nil {
			return nil, err
		}
		if wrote == nil {
			wrote = phaseCounts{}
		}
		wrote[key] = n
	}
	return wrote, nil
}

// phaseCounts are committed ph/ counts by key, kept by the apply goroutine.
// A count falls to zero and rises again all the time (one document
// processing, then none), and a count of zero has no key, so the newest
// entry of a hot count in the memtable is usually a tombstone over
// thousands of older versions, and a Get steps through all of them: that
// was half the CPU of applying the small fetches of a steady load (bench
// profile, BENCHMARKS.md item 22). With this, each count is read from
// Pebble once.
type phaseCounts map[string]int64

func (p phaseCounts) read(tx *Tx, key string) (int64, error) {
	if n, ok := p[key]; ok {
		return n, nil
	}
	val, found, err := tx.getRaw([]byte(key))
	if err != nil || !found {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(val)), nil
}

// commit takes the counts a committed fetch wrote.
func (p phaseCounts) commit(wrote phaseCounts) {
	for k, n := range wrote {
		p[k] = n
	}
}

func writeCount(tx *Tx, key []byte, n int64) error {
	// No key for a count of zero, as after a backfill, so live views and
	// rebuilt or backfilled ones stay byte-identical.
	if n == 0 {
		return tx.del(key)
	}
	out := make([]byte, 8)
	binary.BigEndian.PutUint64(out, uint64(n))
	return tx.set(key, out)
}

// backfillPhases writes the ph/ counts for views made before they existed
// (documents but no counts), from the documents themselves, so an upgraded
// node reports what a rebuild from the log would. It runs in Open, before
// anything is applied.
func (v *Views) backfillPhases() error {
	db := v.db
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
	return v.commitDurable(b)
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
