package projections

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCrashKeepsHistoryWhole: a fetch commits the history's copies of its
// events, merged into windows that span fetches, in the batch that holds
// its index entries and offsets (ApplyRecords, and Pipeline, where a
// fetch's commit runs beside the next fetch's fold). Whatever a crash
// keeps of what was not yet synced, no index entry names an event that is
// missing, no window holds a copy twice, the offsets agree with the
// history, and applying the rest of the log completes it. Twelve crashes
// without a WAL (WithoutWAL: a crash keeps the memtables flushed before
// it, small here so that some are) and twelve with one (the default: it
// keeps what of the WAL's unsynced tail reached the disk).
func TestCrashKeepsHistoryWhole(t *testing.T) {
	t.Parallel()
	recs := batchLog(600) // one batch: every event is in its history
	const fetch = 250     // windows of copies span fetches
	// What the views hold when nothing crashed, to compare every crash's
	// completed views with, key by key.
	ref, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for i := 0; i < len(recs); i += fetch {
		if err := ref.ApplyRecords(recs[i:min(i+fetch, len(recs))]); err != nil {
			t.Fatal(err)
		}
	}
	refSnap, err := ref.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer refSnap.Close()
	midway := map[bool]int{}
	for seed := range 24 {
		wal := seed >= 12
		var opts []Option
		if !wal {
			opts = []Option{WithoutWAL(), func(v *Views) { v.memTable = 64 << 10 }}
		}
		fs := vfs.NewCrashableMem()
		v, err := open("/", fs, opts)
		if err != nil {
			t.Fatal(err)
		}
		// Half the seeds apply as Run does, each fetch folding while the
		// one before commits: the commits still land in the log's order.
		p := v.Pipeline()
		for i := 0; i < len(recs); i += fetch {
			f := recs[i:min(i+fetch, len(recs))]
			if seed%2 == 1 {
				err = p.Apply(f)
			} else {
				err = v.ApplyRecords(f)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: []int{99, 97, 95, 90}[seed%4], RNG: rand.New(rand.NewPCG(uint64(seed), 7))})
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		w, err := open("/", crashed, opts)
		if err != nil {
			t.Fatalf("seed %d: reopen after the crash: %v", seed, err)
		}
		kept := int(w.Offsets()[0])
		h, err := w.fullHistory(HistoryBatch, "o1", "b1")
		if err != nil {
			t.Fatalf("seed %d: %d records kept, history: %v", seed, kept, err)
		}
		if len(h) != kept {
			t.Fatalf("seed %d: the offsets say %d records applied, the history holds %d", seed, kept, len(h))
		}
		t.Logf("seed %d, WAL %v: %d of %d records kept", seed, wal, kept, len(recs))
		if kept > 0 && kept < len(recs) {
			midway[wal]++
		}
		for i := kept; i < len(recs); i += fetch {
			if err := w.ApplyRecords(recs[i:min(i+fetch, len(recs))]); err != nil {
				t.Fatal(err)
			}
		}
		if h, err = w.fullHistory(HistoryBatch, "o1", "b1"); err != nil || len(h) != len(recs) {
			t.Fatalf("seed %d: after applying the rest, %d of %d events in the history (%v)", seed, len(h), len(recs), err)
		}
		if diffs, err := Diff(refSnap, w, 5); err != nil || len(diffs) > 0 {
			t.Fatalf("seed %d: after applying the rest, the views differ from views that never crashed: %v, %v", seed, diffs, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, wal := range []bool{false, true} {
		if midway[wal] == 0 {
			t.Fatalf("WAL %v: no crash fell within the log: the test checked nothing", wal)
		}
		t.Logf("WAL %v: %d of 12 crashes kept part of the log", wal, midway[wal])
	}
}

// TestCrashKeepsTheRecordOfTheLog: the record of which log the views were
// built from is made durable before Run applies anything, with a WAL or
// without one, so views that lose every unsynced write to a crash still
// refuse another log.
func TestCrashKeepsTheRecordOfTheLog(t *testing.T) {
	t.Parallel()
	for _, wal := range []bool{false, true} {
		fs := vfs.NewCrashableMem()
		var opts []Option
		if !wal {
			opts = []Option{WithoutWAL()}
		}
		v, err := open("/", fs, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.bindLog("events", "id-1"); err != nil {
			t.Fatal(err)
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		w, err := open("/", crashed, opts)
		if err != nil {
			t.Fatalf("WAL %v: reopen after the crash: %v", wal, err)
		}
		err = w.CheckLog("events", "id-2")
		w.Close()
		if !errors.Is(err, ErrForeignLog) {
			t.Fatalf("WAL %v: after a crash, views bound to log id-1 met id-2 with %v, want ErrForeignLog", wal, err)
		}
	}
}
