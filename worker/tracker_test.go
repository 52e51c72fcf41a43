package worker

import "testing"

func TestTrackerCommitsOnlyContiguousPrefix(t *testing.T) {
	t.Parallel()
	tr := newTracker()
	for _, off := range []int64{10, 11, 12, 13} {
		tr.start(0, off)
	}
	tr.start(1, 5)
	steps := []struct {
		part int32
		off  int64
		want int64
	}{
		{0, 12, -1}, // 10 and 11 still running: nothing may be committed
		{0, 10, 11}, // 10 done: commit up to 11
		{1, 5, 6},   // partitions are independent
		{0, 13, -1}, // 11 still running
		{0, 11, 14}, // 11, 12, 13 done: jump to 14
	}
	for i, s := range steps {
		if got := tr.finish(s.part, s.off); got != s.want {
			t.Fatalf("step %d: finish(%d, %d) = %d, want %d", i, s.part, s.off, got, s.want)
		}
	}
}

func TestTrackerForgetsRevokedPartitions(t *testing.T) {
	t.Parallel()
	tr := newTracker()
	tr.start(3, 1)
	tr.forget([]int32{3})
	// A run that finishes after its partition was revoked must not commit:
	// the new owner re-reads the item and its claim supersedes ours.
	if got := tr.finish(3, 1); got != -1 {
		t.Fatalf("finish after forget = %d, want -1", got)
	}
	tr.start(3, 7)
	if got := tr.finish(3, 7); got != 8 {
		t.Fatalf("finish after reassignment = %d, want 8", got)
	}
}
