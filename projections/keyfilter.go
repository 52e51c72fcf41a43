package projections

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// keyFilter knows every key of the views that the fold reads one by one
// (all but the indexes it only scans: untracked) as a Bloom filter, so
// that a read of a key that does not exist — most reads of the fold: a new
// document, batch, idempotency key, a batch without a webhook — is
// answered without asking Pebble, whose answer for a missing key costs an
// iterator over the memtables and every level, and was a sixth of the
// fold's CPU (BENCHMARKS.md). A key the filter may hold (it
// was written, or a false positive, about 0.3 % per stage) means "ask
// Pebble", so the filter can only save work, never change an answer.
// Deletes leave their key in the filter; that too only means asking.
//
// It grows in stages, each twice the size of the one before at 12 bits a
// key (8 probes), so nothing has to be known in advance; about 1.5 bytes a
// key in all. Views that start empty fill it as they write; views opened
// over existing data load it with one pass over their keys (about 2
// seconds for ten million). Past limit keys it turns itself off, which
// bounds its memory, and every read asks Pebble again.
//
// Its stages live outside the Go heap (words_unix.go), so each costs its
// size once, not again in the collector's headroom; GOMEMLIMIT does not
// count them. If the system refuses a stage, the filter turns off.
//
// It belongs to the apply goroutine, except while Open loads it; release
// returns its memory once nothing applies any more.
type keyFilter struct {
	seed   maphash.Seed
	stages []bloomStage
	keys   int
	limit  int
	off    bool
	// bytes is what the stages hold, for Views.Memory, which other
	// goroutines call.
	bytes atomic.Int64
}

// keyFilterLimit bounds the filter: 32M keys, about 48 MiB, the views of
// several million documents.
const keyFilterLimit = 32 << 20

// bloomStage is one fixed-size Bloom filter of the chain.
type bloomStage struct {
	bits     []uint64
	mask     uint64 // bits in the filter - 1 (a power of two)
	capacity int
	keys     int
}

const (
	bloomBitsPerKey = 12
	bloomProbes     = 8
	bloomFirstStage = 1 << 14 // keys
)

func newKeyFilter(limit int) *keyFilter {
	return &keyFilter{seed: maphash.MakeSeed(), limit: limit, off: limit <= 0}
}

// newStage maps a stage for capacity keys; ok is false if the system
// refused its memory.
func newStage(capacity int) (s bloomStage, ok bool) {
	n := uint64(1) << bits.Len64(uint64(capacity*bloomBitsPerKey-1)) // bits, rounded up to a power of two
	w := allocWords(int(n / 64))
	return bloomStage{bits: w, mask: n - 1, capacity: capacity}, w != nil
}

// release turns the filter off and returns its stages' memory: from now
// on it holds nothing and every read asks Pebble.
func (f *keyFilter) release() {
	if f == nil {
		return
	}
	f.off = true
	for _, s := range f.stages {
		freeWords(s.bits)
	}
	f.stages = nil
	f.bytes.Store(0)
}

// probes yields the bloomProbes bit positions of hash h (double hashing).
func probe(h uint64, i int) uint64 { return h + uint64(i)*(bits.RotateLeft64(h, 32)|1) }

func (f *keyFilter) add(key []byte) {
	if f == nil || f.off || untracked(key) {
		return
	}
	if f.keys >= f.limit {
		f.release() // too many to answer for
		return
	}
	if len(f.stages) == 0 || f.stages[len(f.stages)-1].keys >= f.stages[len(f.stages)-1].capacity {
		capacity := bloomFirstStage
		if len(f.stages) > 0 {
			capacity = 2 * f.stages[len(f.stages)-1].capacity
		}
		s, ok := newStage(capacity)
		if !ok {
			f.release()
			return
		}
		f.stages = append(f.stages, s)
		f.bytes.Add(int64(8 * len(s.bits)))
	}
	s := &f.stages[len(f.stages)-1]
	h := maphash.Bytes(f.seed, key)
	for i := range bloomProbes {
		b := probe(h, i) & s.mask
		s.bits[b/64] |= 1 << (b % 64)
	}
	s.keys++
	f.keys++
}

// absent reports whether key was certainly never written.
func (f *keyFilter) absent(key []byte) bool {
	if f == nil || f.off || untracked(key) {
		return false
	}
	h := maphash.Bytes(f.seed, key)
	for si := range f.stages {
		s := &f.stages[si]
		hit := true
		for i := range bloomProbes {
			if b := probe(h, i) & s.mask; s.bits[b/64]&(1<<(b%64)) == 0 {
				hit = false
				break
			}
		}
		if hit {
			return false
		}
	}
	return true
}

// untracked keys are never read one by one: the history index (written,
// and read by the history endpoints with a scan); the index entries that
// list a batch's documents and notifications, an endpoint's and a
// subject's notifications, and the pending deliveries (bd/, bn/, en/,
// jn/, wq/: written, scanned by queries and the delivery duty, deleted,
// never got); and the per-status counts, read once per process and then
// kept (phase.go). The filter spends no memory on them and a read of one,
// should there ever be one, asks Pebble. The index entries were more than
// a third of the keys the filter held on the bench's log (a lifecycle's
// member entry, its notification's entry and its due entry, beside its
// document, batch, webhook and notification); a count is deleted at zero
// and written again when it comes back, which the filter would count as a
// new key every time.
func untracked(key []byte) bool {
	end := bytes.IndexByte(key[:min(len(key), 3)], '/')
	if end < 0 {
		return false
	}
	for _, f := range untrackedFamilies {
		if string(key[:end]) == f {
			return true
		}
	}
	return false
}

// untrackedFamilies are the key families (what comes before the first
// '/') that untracked names, in the order of their keys, which load's
// ranges depend on.
var untrackedFamilies = []string{"bd", "bn", "en", "h", "he", "jn", "ph", "wq"}

// load adds every key of db that the filter tracks (untracked), skipping
// the untracked families whole.
func (f *keyFilter) load(db *pebble.DB) error {
	// Every key is printable ASCII (keys.go): a family <f>/ ends before
	// <f>0, and every key is below 0xff, where ensureHistory's range
	// deletion ends too.
	var lower []byte
	for _, fam := range untrackedFamilies {
		if err := f.loadRange(db, lower, []byte(fam+"/")); err != nil {
			return err
		}
		lower = []byte(fam + "0")
	}
	return f.loadRange(db, lower, []byte{0xff})
}

func (f *keyFilter) loadRange(db *pebble.DB, lower, upper []byte) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("projections: key filter: %w", err)
	}
	for ok := it.First(); ok && !f.off; ok = it.Next() {
		f.add(it.Key())
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("projections: key filter: %w", err)
	}
	return nil
}
