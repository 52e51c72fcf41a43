package projections_test

import (
	"testing"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// TestMemoryReportsItsParts applies a log and reads it back from disk: the
// key filter grows by a stage twice the size of the last, the memtable
// holds what was written, and the block cache what was read from the
// tables after a flush.
func TestMemoryReportsItsParts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Opening writes a key or two: the first stage, 16,384 keys at 12
	// bits, rounded up to 2^18 bits.
	const first = 1 << 18 / 8
	if m := f.v.Memory(); m.KeyFilter != first || m.BlockCache != 0 || m.MemTables <= 0 {
		t.Fatalf("empty views hold %+v", m)
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
	if m := f.v.Memory(); m.BlockCache <= 0 {
		t.Fatalf("a read from the tables left the block cache empty: %+v", m)
	}
}

// TestMemoryOfAFullKeyFilter: past its limit the filter turns off and
// holds nothing.
func TestMemoryOfAFullKeyFilter(t *testing.T) {
	t.Parallel()
	f := setup(t, projections.WithKeyFilterLimit(50))
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
