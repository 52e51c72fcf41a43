package projections_test

import (
	"bytes"
	"testing"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// TestMemoryReportsItsParts applies a log and reads it back from disk: the
// key filter grows by a stage twice the size of the last, the memtable
// holds what was written, and the block cache grows by what was read from
// the tables after a flush. (Opening empty views flushes the record of
// their format, and reads it: the cache does not start empty.)
func TestMemoryReportsItsParts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Opening writes a key or two: the first stage, 16,384 keys at 12
	// bits, rounded up to 2^18 bits.
	const first = 1 << 18 / 8
	opened := f.v.Memory()
	if opened.KeyFilter != first || opened.MemTables <= 0 {
		t.Fatalf("empty views hold %+v", opened)
	}
	var lc lifecycles
	l := newLog()
	for range 20 {
		var recs []eventstore.Record
		for range 500 {
			recs = lc.next(l, recs)
		}
		f.apply(recs...)
		if f.v.Memory().KeyFilter != first {
			break
		}
	}
	if m := f.v.Memory(); m.KeyFilter != first+2*first {
		t.Fatalf("after %d lifecycles the key filter holds %d bytes, want a second stage of twice the first", lc.doc, m.KeyFilter)
	}
	if err := f.v.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.Document("o1", "doc_1"); err != nil {
		t.Fatal(err)
	}
	if m := f.v.Memory(); m.BlockCache <= opened.BlockCache {
		t.Fatalf("a read from the tables left the block cache as it was at open: %+v, then %+v", opened, m)
	}
}

// TestMemoryOfAFullKeyFilter: past its limit the filter turns off and
// holds nothing.
func TestMemoryOfAFullKeyFilter(t *testing.T) {
	t.Parallel()
	f := setup(t, projections.WithKeyFilterLimit(30)) // 20 documents and batches
	var lc lifecycles
	var recs []eventstore.Record
	l := newLog()
	for range 20 {
		recs = lc.next(l, recs)
	}
	f.apply(recs...)
	if m := f.v.Memory(); m.KeyFilter != 0 {
		t.Fatalf("a key filter past its limit holds %d bytes", m.KeyFilter)
	}
}

// TestKeyFilterCountsKeysNotWrites applies lifecycles in fetches of one to
// five records, so that every fetch rewrites a document and its batch: the
// key filter must count the keys the views hold, not the writes, since it
// sizes its stages and its limit by that count.
func TestKeyFilterCountsKeysNotWrites(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var lc lifecycles
	l := newLog()
	var recs []eventstore.Record
	for range 300 {
		recs = lc.next(l, recs)
	}
	for i, n := 0, 0; i < len(recs); i += n {
		n = min(1+i%5, len(recs)-i)
		f.apply(recs[i : i+n]...)
	}
	held := 0
	it, err := f.v.DB().NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		// What the filter does not track is not in it (keyfilter_test.go
		// checks which keys those are), nor are the offsets, written beside
		// the views (until a reopen loads them).
		if k := it.Key(); projections.Tracked(k) && !bytes.HasPrefix(k, []byte("o/")) {
			held++
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if got := f.v.KeyFilterKeys(); got != held {
		t.Fatalf("the key filter counted %d keys for %d held (%d records applied)", got, held, len(recs))
	}
}
