package projections

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestKeyFilterNeverLosesAKey: every key added is reported as maybe
// present, across several stages, and keys never added are mostly absent.
func TestKeyFilterNeverLosesAKey(t *testing.T) {
	t.Parallel()
	f := newKeyFilter(1 << 20)
	const n = 200_000 // stages of 16k, 32k, 64k, 128k keys
	for i := range n {
		f.add(fmt.Appendf(nil, "d/o1/doc_%d", i))
	}
	if len(f.stages) < 4 {
		t.Fatalf("%d stages for %d keys", len(f.stages), n)
	}
	for i := range n {
		if k := fmt.Appendf(nil, "d/o1/doc_%d", i); f.absent(k) {
			t.Fatalf("%s added but absent", k)
		}
	}
	fp := 0
	for i := range n {
		if !f.absent(fmt.Appendf(nil, "d/o2/doc_%d", i)) {
			fp++
		}
	}
	// About 0.3 % per stage at 12 bits a key; well under 2 % with four.
	if rate := float64(fp) / n; rate > 0.02 {
		t.Fatalf("false positives %.2f %% (%d of %d)", 100*rate, fp, n)
	}
	t.Logf("false positives %.3f %% over %d stages", 100*float64(fp)/n, len(f.stages))
}

// TestKeyFilterTurnsOff: past its limit, or with none, it answers nothing
// (every read asks Pebble).
func TestKeyFilterTurnsOff(t *testing.T) {
	t.Parallel()
	f := newKeyFilter(10)
	if !f.absent([]byte("d/o1/x")) {
		t.Fatal("an empty filter holds a key")
	}
	for i := range 11 {
		f.add(fmt.Appendf(nil, "d/o1/doc_%d", i))
	}
	if f.absent([]byte("d/o1/x")) || !f.off || f.stages != nil {
		t.Fatalf("a full filter still answers (off %v, %d stages)", f.off, len(f.stages))
	}
	if newKeyFilter(0).absent([]byte("d/o1/x")) {
		t.Fatal("a filter without a limit answers")
	}
}

// TestKeyFilterSkipsWhatIsOnlyScanned: the history index, the index
// entries and the per-status counts are never answered for (a read asks
// Pebble) and take no room, while the views read one by one are.
func TestKeyFilterSkipsWhatIsOnlyScanned(t *testing.T) {
	t.Parallel()
	f := newKeyFilter(100)
	for _, k := range []string{"h/d/o1/doc_1/window", "he/pos", "ph/succeeded", "bd/o1/b1/0000000000000007/doc_1",
		"bn/o1/b1/msg_1", "en/o1/ep_1/msg_1", "jn/o1/job_1/msg_1", "wq/\x00\x00\x00\x01due/o1/msg_1"} {
		f.add([]byte(k))
		if f.absent([]byte(k)) || f.absent([]byte(k+"x")) {
			t.Errorf("the filter answers for %s", k)
		}
	}
	if f.keys != 0 {
		t.Fatalf("%d keys counted for keys it does not track", f.keys)
	}
	for _, k := range []string{"d/o1/doc_1", "b/o1/b1", "bw/o1/b1", "wn/o1/msg_1", "dj/o1/doc_1/job_1", "j/o1/job_1", "i/o1/k", "org/o1"} {
		if !f.absent([]byte(k)) {
			t.Errorf("%s: an empty filter holds it", k)
		}
		f.add([]byte(k))
		if f.absent([]byte(k)) {
			t.Errorf("%s added but absent", k)
		}
	}
}

// TestKeyFilterLoadsStoredKeys: views opened over existing data know every
// stored key the filter tracks.
func TestKeyFilterLoadsStoredKeys(t *testing.T) {
	t.Parallel()
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if !slices.IsSortedFunc(untrackedFamilies, func(a, b string) int { return strings.Compare(a+"/", b+"/") }) {
		t.Fatalf("untrackedFamilies %q are not in the order of their keys", untrackedFamilies)
	}
	// Keys of every tracked family around the untracked ones.
	keys := []string{"b/o1/b1", "bw/o1/b1", "d/o1/doc_1", "dj/o1/doc_1/job_1", "h0", "i/o1/k", "j/o1/job_1", "org/o1", "we/o1/ep_1", "wn/o1/msg_1", "z/last"}
	for _, k := range append(keys, "h/d/o1/doc_1/w", "he/p", "bd/o1/b1/0000000000000001/doc_1", "wq/p") {
		if err := v.db.Set([]byte(k), []byte("v"), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	f := newKeyFilter(100)
	if err := f.load(v.db); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if f.absent([]byte(k)) {
			t.Errorf("%s stored but absent after load", k)
		}
	}
	// meta/history and the keys above; the history index and the index
	// entries were skipped.
	if f.keys != len(keys)+1 {
		t.Errorf("loaded %d keys, want %d", f.keys, len(keys)+1)
	}
}

// TestKeyFilterStagesAreOutsideTheHeap: a stage costs its size once, not
// again in the collector's headroom, so the Go heap does not grow with
// it. Not parallel: no other test allocates while it measures.
func TestKeyFilterStagesAreOutsideTheHeap(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, ok := newStage(4 << 20) // 4M keys at 12 bits: 8 MiB
	if !ok {
		t.Fatal("the system refused an 8 MiB stage")
	}
	for i := range s.bits { // touch every page
		s.bits[i] = ^uint64(0)
	}
	runtime.ReadMemStats(&after)
	size := uint64(8 * len(s.bits))
	if size != 8<<20 {
		t.Fatalf("stage of %d bytes, want 8 MiB", size)
	}
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > int64(size/4) { // it may shrink
		t.Fatalf("the Go heap grew by %d bytes with a stage of %d", grew, size)
	}
	f := newKeyFilter(1 << 20)
	f.stages = append(f.stages, s)
	f.bytes.Store(int64(size))
	f.release()
	f.release() // twice is harmless
	if !f.off || f.stages != nil || f.bytes.Load() != 0 || f.absent([]byte("d/o1/x")) {
		t.Fatalf("a released filter still answers (off %v, %d stages, %d bytes)", f.off, len(f.stages), f.bytes.Load())
	}
}
