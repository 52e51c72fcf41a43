package projections

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// fetchBatch is the Pebble batch one fetch writes its views into. It
// starts without an index. The fold reads what the fetch wrote from the
// fetch's own maps (Tx.written, fetchObjects), not from the batch, and an
// indexed batch pays a skiplist insert for every key it is given: without
// them BenchmarkApplyBenchLog applies 3-7 % more events a second
// (BENCHMARKS.md, item 36). A fold that must iterate (a batch's members,
// an org's endpoints that the fetch wrote), or read a key those maps do
// not track, asks for the index (indexed), and the batch is copied into
// an indexed one, once per fetch; the rest of the fetch then writes into
// that one.
type fetchBatch struct {
	db *pebble.DB
	b  *pebble.Batch
	// prev is the fetch before, while its commit runs (Pipeline): what it
	// wrote is not yet Pebble's.
	prev *staged
}

// newFetchBatch starts a fetch's batch, sized by a recent fetch's with a
// quarter more room: a batch that outgrows its buffer copies it to one
// twice the size. A closed batch goes back to Pebble's pool with its
// buffer (Pebble keeps buffers of up to 1 MiB, a small fetch's), so the
// next fetch's usually needs no new one: the buffers were a quarter of
// the bytes the apply path allocated.
func newFetchBatch(db *pebble.DB, hint int) *fetchBatch {
	return &fetchBatch{db: db, b: db.NewBatchWithSize(hint+hint/4, pebble.WithMaxRetainedSizeBytes(maxBatchHint+maxBatchHint/4))}
}

// reader is where a point read of a key the fetch's maps do not hold
// goes: such a key is one the fetch has not written (set and del record
// every key they write in Tx.written, except the untracked families, which
// getRaw reads through indexed; a count, the one it reads here, is read
// before the fetch writes it), so the views as committed answer it,
// unless the batch has its index already.
func (f *fetchBatch) reader() pebble.Reader {
	if f.b.Indexed() {
		return f.b
	}
	return f.db
}

// indexed returns the fetch's batch with an index, which reads and
// iterations see the fetch's own writes through, over the views as the
// fetch before left them.
func (f *fetchBatch) indexed() (*pebble.Batch, error) {
	if f.b.Indexed() {
		return f.b, nil
	}
	if err := f.settle(); err != nil {
		return nil, err
	}
	ib := f.db.NewIndexedBatchWithSize(f.b.Len())
	if err := ib.Apply(f.b, nil); err != nil {
		ib.Close()
		return nil, fmt.Errorf("projections: index the fetch's batch: %w", err)
	}
	f.b.Close()
	f.b = ib
	return ib, nil
}

// close releases the batch, committed or not.
func (f *fetchBatch) close() { f.b.Close() }

// settle waits until the fetch before has committed, after which Pebble
// answers everything it wrote.
func (f *fetchBatch) settle() error {
	if f.prev == nil {
		return nil
	}
	f.prev.release()
	if err := f.prev.wait(); err != nil {
		return fmt.Errorf("projections: the fetch before: %w", err)
	}
	f.prev = nil
	return nil
}

// prevWritten is the fetch before's value of a tracked key it read or
// wrote (nil: absent), while it commits; ok is false when it has none.
func (f *fetchBatch) prevWritten(key []byte) (val []byte, ok bool) {
	if f.prev == nil {
		return nil, false
	}
	val, ok = f.prev.written[string(key)]
	return val, ok
}

// prevObject is the fetch before's decoded view at key, while it commits.
func (f *fetchBatch) prevObject(key []byte) (*object, bool) {
	if f.prev == nil {
		return nil, false
	}
	o, ok := f.prev.objects[string(key)]
	return o, ok
}

// prevWroteEndpoints reports whether the fetch before wrote org's webhook
// endpoints and has not committed yet.
func (f *fetchBatch) prevWroteEndpoints(org string) bool {
	return f.prev != nil && f.prev.endpointsWritten[org]
}
