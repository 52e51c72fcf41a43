package projections

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/s2"
)

// The history's copies of the events (historyProjection) are kept one value
// per partition and window of copiesWindow offsets, he/<partition
// u32><window u64>. While a window is open, its last offset not yet
// applied, its value is its copies in log order (appendCopy), merged once
// per fetch. Once the views have applied past it no copy can join it, and
// the fetch that got there seals it: sealedCopies, then the same copies
// compressed (s2's block format).
//
// The copies are half of the bytes the views write, and a sealed window is
// about 2.7 times smaller (its events repeat their org, documents, actors
// and ids), which Pebble's memtable, WAL, flushes and compactions all pay
// for: the apply path of the bench's log spent a fifth less CPU on a
// record in alternating rounds, an eighth less in full runs
// (BENCHMARKS.md, item 43).
// Compressing each fetch's run instead would have made a window's value
// depend on where fetches ended. Whether a window is sealed depends only
// on the offsets applied, so views rebuilt to the same offsets, by the
// same build, hold the same bytes (invariant 4).

// copiesWindow is how many offsets of a partition one value of the events'
// copies covers: 64. A fetch merges once per partition and window (about
// six times per partition in a full fetch of 4,096 records over 12
// partitions) instead of writing a key per event, which was two fifths of
// the keys Pebble inserted, flushed and compacted; a read of one event
// reads its window's value, at most 64 copies (about 14 KiB, 5 KiB sealed,
// in the bench's log).
const copiesWindow = 1 << 6

// sealedCopies starts a sealed window's value. An open window starts with
// its first copy's place in the window, a uvarint below copiesWindow, so
// never with this byte.
const sealedCopies = 0xff

var errBadCopies = errors.New("projections: malformed window of history events")

// historyEventKey is the key of the window that holds the copy of the
// event at p/o.
func historyEventKey(p int32, o int64) []byte {
	return appendPos([]byte("he/"), p, o&^(copiesWindow-1))
}

// appendCopy appends the copy of the event at offset o to a window's
// copies: o's place in the window and the copy's length, as uvarints, then
// the copy.
func appendCopy(window []byte, o int64, val []byte) []byte {
	window = binary.AppendUvarint(window, uint64(o&(copiesWindow-1)))
	window = binary.AppendUvarint(window, uint64(len(val)))
	return append(window, val...)
}

// findCopy returns the copy of the event at offset o from its window's
// copies (windowCopies); found is false when the window does not hold it.
func findCopy(window []byte, o int64) (val []byte, found bool, err error) {
	want := uint64(o & (copiesWindow - 1))
	for len(window) > 0 {
		at, n := binary.Uvarint(window)
		if n <= 0 {
			return nil, false, errBadCopies
		}
		window = window[n:]
		size, n := binary.Uvarint(window)
		if n <= 0 || size > uint64(len(window)-n) {
			return nil, false, errBadCopies
		}
		window = window[n:]
		if at == want {
			return window[:size], true, nil
		}
		window = window[size:]
	}
	return nil, false, nil
}

// windowCopies returns the copies a window's stored value holds, in dst
// when it has to decompress them.
func windowCopies(dst, val []byte) ([]byte, error) {
	if len(val) == 0 || val[0] != sealedCopies {
		return append(dst[:0], val...), nil
	}
	n, err := s2.DecodedLen(val[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadCopies, err)
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	out, err := s2.Decode(dst[:n], val[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadCopies, err)
	}
	return out, nil
}

// offsetSpan is what a fetch applied of one partition: from the next
// offset before it to the next offset after it.
type offsetSpan struct{ from, to int64 }

// copyWriter writes one fetch's copies into its batch.
type copyWriter struct {
	db    pebble.Reader // the views with every earlier fetch committed
	b     *pebble.Batch
	spans map[int32]offsetSpan
	runs  map[int32]*copyRun
	buf   []byte // a window's stored and new copies, to seal
	enc   []byte // a sealed value
}

// copyRun is one partition's copies in the window being written.
type copyRun struct {
	window int64 // its first offset
	first  int64 // the first window the fetch wrote
	val    []byte
}

func newCopyWriter(db pebble.Reader, b *pebble.Batch, spans map[int32]offsetSpan) *copyWriter {
	return &copyWriter{db: db, b: b, spans: spans, runs: make(map[int32]*copyRun, len(spans))}
}

// add appends the copy of the event at p/o, writing the run first if o is
// in the next window. A partition's copies come in log order.
func (w *copyWriter) add(p int32, o int64, val []byte) error {
	win := o &^ (copiesWindow - 1)
	r := w.runs[p]
	if r == nil {
		r = &copyRun{window: win, first: win}
		w.runs[p] = r
	}
	if win != r.window {
		if err := w.flush(p, r); err != nil {
			return err
		}
		r.window = win
	}
	r.val = appendCopy(r.val, o, val)
	return nil
}

// finish writes each partition's last run, and seals the window a
// partition had open before the fetch when the fetch applied past it
// without a copy in it.
func (w *copyWriter) finish() error {
	for p, r := range w.runs {
		if err := w.flush(p, r); err != nil {
			return err
		}
	}
	for p, s := range w.spans {
		open := s.from &^ (copiesWindow - 1)
		if s.from == open || s.to < open+copiesWindow {
			continue // nothing was open, or it still is
		}
		if r := w.runs[p]; r != nil && r.first == open {
			continue // flush sealed it
		}
		if err := w.seal(p, open, nil); err != nil {
			return err
		}
	}
	return nil
}

// flush writes a run: merged while its window is open, sealed once the
// fetch applied past it.
func (w *copyWriter) flush(p int32, r *copyRun) error {
	if len(r.val) == 0 {
		return nil
	}
	var err error
	if w.spans[p].to >= r.window+copiesWindow {
		err = w.seal(p, r.window, r.val)
	} else if err = w.b.Merge(historyEventKey(p, r.window), r.val, nil); err != nil {
		err = fmt.Errorf("projections: history: %w", err)
	}
	r.val = r.val[:0]
	return err
}

// seal sets the window of p at win to its copies compressed: those earlier
// fetches merged, if the window began before this fetch, then copies.
func (w *copyWriter) seal(p int32, win int64, copies []byte) error {
	key := historyEventKey(p, win)
	if win < w.spans[p].from {
		old, closer, err := w.db.Get(key)
		switch {
		case err == nil:
			if len(old) > 0 && old[0] == sealedCopies {
				closer.Close()
				return fmt.Errorf("%w: window %d/%d sealed twice", errBadCopies, p, win)
			}
			copies = append(append(w.buf[:0], old...), copies...)
			w.buf = copies
			closer.Close()
		case !errors.Is(err, pebble.ErrNotFound):
			return fmt.Errorf("projections: history: %w", err)
		}
	}
	if len(copies) == 0 {
		return nil
	}
	need := 1 + s2.MaxEncodedLen(len(copies))
	if cap(w.enc) < need {
		w.enc = make([]byte, need)
	}
	w.enc = w.enc[:need]
	w.enc[0] = sealedCopies
	sealed := s2.Encode(w.enc[1:], copies)
	if err := w.b.Set(key, w.enc[:1+len(sealed)], nil); err != nil {
		return fmt.Errorf("projections: history: %w", err)
	}
	return nil
}

// copiesReader reads the events' copies for one history, keeping the last
// window it read: an entity's positions come in log order, so its events
// mostly share windows, and a window is a new value, decompressed or
// merged from several fetches, on every read.
type copiesReader struct {
	db     pebble.Reader
	key    []byte
	window []byte
}

// copy returns the copy of the event at p/o.
func (r *copiesReader) copy(p int32, o int64) ([]byte, error) {
	if key := historyEventKey(p, o); r.key == nil || string(key) != string(r.key) {
		val, closer, err := r.db.Get(key)
		if err != nil {
			return nil, err
		}
		r.window, err = windowCopies(r.window, val)
		closer.Close()
		if err != nil {
			r.key = nil
			return nil, err
		}
		r.key = key
	}
	val, found, err := findCopy(r.window, o)
	if err == nil && !found {
		err = pebble.ErrNotFound
	}
	return val, err
}
