package projections

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/eventstore"
)

// Rebuild folds the log from offset 0 up to until (the end offsets to reach)
// into fresh views in dir. Invariant 4 says the result equals the live views
// that reached the same offsets, byte for byte. opts come after the
// rebuild's own (a larger memtable).
func Rebuild(ctx context.Context, store *eventstore.Store, dir string, until map[int32]int64, opts ...Option) (*Views, error) {
	// A rebuild writes the whole log in full fetches: a 64 MiB memtable
	// flushes and compacts far less than the default 4 MiB (replay of 200k
	// events: 16-17k -> 24-26k events/s), and the memory is the rebuild's
	// alone, given back when it closes.
	v, err := open(dir, nil, append([]Option{func(v *Views) { v.memTable, v.rebuild = 64<<20, true }}, opts...))
	if err != nil {
		return nil, err
	}
	if err := v.Run(ctx, store, until); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// Snapshot is a consistent, frozen copy of live views and of the offsets
// they reached, so they can be compared while the node keeps applying.
type Snapshot struct {
	snap    *pebble.Snapshot
	Offsets map[int32]int64
}

// Snapshot freezes the views. Close it when done.
func (v *Views) Snapshot() (*Snapshot, error) {
	s := &Snapshot{snap: v.db.NewSnapshot(), Offsets: map[int32]int64{}}
	err := scan(s.snap, []byte(prefixOffset), nil, func(k, val []byte) (bool, error) {
		s.Offsets[int32(binary.BigEndian.Uint32(k[len(prefixOffset):]))] = int64(binary.BigEndian.Uint64(val))
		return true, nil
	})
	if err != nil {
		s.snap.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the snapshot.
func (s *Snapshot) Close() error { return s.snap.Close() }

// Diff compares a snapshot of live views with (rebuilt) views key by key and
// describes up to max differences. The record of the views' log is not
// compared: views that predate it have none (CheckLog compares logs).
func Diff(a *Snapshot, b *Views, max int) ([]string, error) {
	ia, err := a.snap.NewIter(&pebble.IterOptions{})
	if err != nil {
		return nil, err
	}
	defer ia.Close()
	ib, err := b.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		return nil, err
	}
	defer ib.Close()
	var out []string
	okA, okB := ia.First(), ib.First()
	for (okA || okB) && len(out) < max {
		switch {
		case okA && isLogKey(ia.Key()):
			okA = ia.Next()
		case okB && isLogKey(ib.Key()):
			okB = ib.Next()
		case okA && (!okB || bytes.Compare(ia.Key(), ib.Key()) < 0):
			out = append(out, fmt.Sprintf("only in first: %q", ia.Key()))
			okA = ia.Next()
		case okB && (!okA || bytes.Compare(ib.Key(), ia.Key()) < 0):
			out = append(out, fmt.Sprintf("only in second: %q", ib.Key()))
			okB = ib.Next()
		default:
			if !bytes.Equal(ia.Value(), ib.Value()) {
				out = append(out, fmt.Sprintf("differs at %q: %q != %q", ia.Key(), ia.Value(), ib.Value()))
			}
			okA, okB = ia.Next(), ib.Next()
		}
	}
	return out, nil
}
