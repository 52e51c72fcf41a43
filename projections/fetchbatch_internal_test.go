package projections

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestFetchBatchIndexesOnDemand: until a fold asks for the index, a point
// read goes to the committed views; the index then holds every write made
// before it.
func TestFetchBatchIndexesOnDemand(t *testing.T) {
	t.Parallel()
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fb := newFetchBatch(v.db, 0)
	if err := fb.b.Set([]byte("d/o/x"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fb.reader().Get([]byte("d/o/x")); !errors.Is(err, pebble.ErrNotFound) {
		t.Fatalf("before the index, a read found the fetch's write (%v)", err)
	}
	ib, err := fb.indexed()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := fb.indexed(); again != ib || fb.b != ib || fb.reader() != pebble.Reader(ib) {
		t.Fatal("the index was not made once and kept")
	}
	val, closer, err := ib.Get([]byte("d/o/x"))
	if err != nil || string(val) != "1" {
		t.Fatalf("the index lost a write made before it: %q, %v", val, err)
	}
	closer.Close()
	if err := ib.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	fb.close()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOnlyAFoldThatIteratesIndexesItsFetch: a fetch of lifecycles is
// applied without an index; a BatchDeleted iterates the batch's members,
// including those uploaded earlier in its own fetch, which the views then
// show as if each record had been a fetch of its own.
func TestOnlyAFoldThatIteratesIndexesItsFetch(t *testing.T) {
	t.Parallel()
	lifecycles := batchLog(30)
	whole, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if err := whole.ApplyRecords(lifecycles[:100]); err != nil {
		t.Fatal(err)
	}
	if whole.indexedFetches != 0 {
		t.Fatalf("a fetch of lifecycles was indexed")
	}
	// The rest of the lifecycles, then the batch's deletion, in one fetch:
	// the deletion must find the documents this fetch uploaded.
	rest := append([]eventstore.Record{}, lifecycles[100:]...)
	rest = append(rest, eventstore.Record{Position: eventstore.Position{Offset: int64(len(lifecycles))},
		Event: &domain.BatchDeleted{Meta: domain.Meta{EventID: "del", OrgID: "o1"}, BatchName: "b1"}})
	if err := whole.ApplyRecords(rest); err != nil {
		t.Fatal(err)
	}
	if whole.indexedFetches != 1 {
		t.Fatalf("%d fetches indexed, want the deletion's", whole.indexedFetches)
	}
	single, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	for _, r := range append(lifecycles[:100:100], rest...) {
		if err := single.ApplyRecords([]eventstore.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	for d := range 30 {
		id := lifecycles[d*5].Event.(*domain.DocumentUploaded).DocumentID
		a, errA := whole.Document("o1", id)
		b, errB := single.Document("o1", id)
		if errA != nil || errB != nil || !a.BatchDeleted || a.Status != b.Status || a.BatchDeleted != b.BatchDeleted {
			t.Fatalf("%s: one fetch %+v (%v), a fetch per record %+v (%v)", id, a, errA, b, errB)
		}
	}
}

// TestUntrackedReadsSeeTheFetch: the fetch's map does not hold the
// untracked families, so a point read of one goes through the index and
// finds what the fetch wrote; a count's read, which comes before the
// fetch writes it, does not make one.
func TestUntrackedReadsSeeTheFetch(t *testing.T) {
	t.Parallel()
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	fb := newFetchBatch(v.db, 0)
	defer fb.close()
	tx := &Tx{fb: fb, views: v, written: map[string][]byte{}}
	if _, found, err := tx.getRaw(phaseKey(domain.StatusQueued)); err != nil || found || fb.b.Indexed() {
		t.Fatalf("a count's read: found %t, %v, indexed %t", found, err, fb.b.Indexed())
	}
	member := memberKey("o1", "b1", 7, "d1")
	if !untracked(member) {
		t.Fatalf("%q is tracked; the test needs an untracked key", member)
	}
	if err := tx.set(member, []byte("m")); err != nil {
		t.Fatal(err)
	}
	if val, found, err := tx.getRaw(member); err != nil || !found || string(val) != "m" {
		t.Fatalf("read of an untracked key the fetch wrote: %q, found %t, %v", val, found, err)
	}
}

// TestAJobRunNeedsNoIndex: the fold moves a job's row for a run that names
// the job without iterating the document's jobs, so a fetch of job runs
// is not indexed, and its jobs read as they do when every record is a
// fetch of its own; a job that covers the document but is not named by the
// run does not move.
func TestAJobRunNeedsNoIndex(t *testing.T) {
	t.Parallel()
	m := func() domain.Meta { return eventstore.NewMeta("o1", "test", "") }
	events := append(finishedJob()[:2:2],
		&domain.JobCreated{Meta: m(), JobID: "job2", Kind: domain.JobExtraction, DocumentIDs: []string{"d1"}})
	events = append(events, finishedJob()[2:]...)
	var recs []eventstore.Record
	for i, e := range events {
		recs = append(recs, eventstore.Record{Position: eventstore.Position{Offset: int64(i)}, Event: e})
	}
	whole, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if err := whole.ApplyRecords(recs); err != nil {
		t.Fatal(err)
	}
	if whole.indexedFetches != 0 || whole.Noops() != 0 {
		t.Fatalf("%d fetches indexed, %d events refused", whole.indexedFetches, whole.Noops())
	}
	single, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	for _, r := range recs {
		if err := single.ApplyRecords([]eventstore.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"job1", "job2"} {
		a, errA := whole.Job("o1", id)
		b, errB := single.Job("o1", id)
		if errA != nil || errB != nil || len(a.Rows) != 1 || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: one fetch %+v (%v), a fetch per record %+v (%v)", id, a, errA, b, errB)
		}
	}
	if j, _ := whole.Job("o1", "job1"); !j.Rows[0].Status.Terminal() {
		t.Fatalf("job1's row did not move with its run: %+v", j.Rows[0])
	}
	if j, _ := whole.Job("o1", "job2"); j.Rows[0].Status.Terminal() {
		t.Fatalf("job2's row moved with a run that does not name it: %+v", j.Rows[0])
	}
}
