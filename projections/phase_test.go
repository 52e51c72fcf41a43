package projections_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
)

// statusesByScan counts the documents of the views by reading every one.
func statusesByScan(t *testing.T, f *fixture) map[domain.Status]int64 {
	t.Helper()
	it, err := f.v.DB().NewIter(&pebble.IterOptions{LowerBound: []byte("d/"), UpperBound: []byte("d0")})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[domain.Status]int64{}
	for ok := it.First(); ok; ok = it.Next() {
		org, id, _ := strings.Cut(string(it.Key()[len("d/"):]), "/")
		d, err := f.v.Document(org, id)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Status]++
	}
	return out
}

// TestDocumentsByStatus checks the incremental per-status counts against a
// scan of every document, over a random log with refused events and batch
// deletions, and that views made before the counts existed get them on open.
func TestDocumentsByStatus(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.apply(newGen(5).records(800)...)
	counts, err := f.v.DocumentsByStatus()
	if err != nil {
		t.Fatal(err)
	}
	want := statusesByScan(t, f)
	if len(want) < 3 || !maps.Equal(counts, want) {
		t.Fatalf("counts %v, documents say %v", counts, want)
	}
	for _, n := range counts {
		if n <= 0 {
			t.Fatalf("a count that is not positive: %v", counts)
		}
	}

	// An older data dir: the same views without the counts.
	before := dump(t, f.v)
	b := f.v.DB().NewBatch()
	if err := b.DeleteRange([]byte("ph/"), []byte("ph0"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if c, _ := f.v.DocumentsByStatus(); len(c) != 0 {
		t.Fatalf("counts left after deleting them: %v", c)
	}
	f.restart()
	got, err := f.v.DocumentsByStatus()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("backfilled %v, want %v", got, want)
	}
	sameDB(t, "backfilled views", before, dump(t, f.v))
}

// TestCountsOverSmallFetches applies a log in fetches of one to seven
// records, as a steady load does, with a restart midway: the counts the
// apply loop keeps between fetches must agree with a scan of the documents
// after every fetch, and the views must be byte-identical to one fetch of
// the whole log.
func TestCountsOverSmallFetches(t *testing.T) {
	t.Parallel()
	recs := newGen(11).records(900)
	whole := setup(t)
	whole.apply(recs...)

	f := setup(t)
	for i, n := 0, 0; i < len(recs); i += n {
		n = min(1+i%7, len(recs)-i)
		f.apply(recs[i : i+n]...)
		if i/450 != (i+n)/450 {
			f.restart()
		}
		if i%5 != 0 {
			continue
		}
		counts, err := f.v.DocumentsByStatus()
		if err != nil {
			t.Fatal(err)
		}
		if want := statusesByScan(t, f); !maps.Equal(counts, want) {
			t.Fatalf("after %d records: counts %v, documents say %v", i+n, counts, want)
		}
	}
	if c, _ := f.v.DocumentsByStatus(); len(c) < 3 {
		t.Fatalf("the log reached only %d statuses: %v", len(c), c)
	}
	sameDB(t, "views applied in small fetches", dump(t, whole.v), dump(t, f.v))
}
