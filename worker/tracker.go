package worker

import "sync"

// tracker finds, per partition, the highest offset below which every work
// item is finished: only that may be committed, since items finish out of
// order and an unfinished one must be re-read after a crash.
type tracker struct {
	mu    sync.Mutex
	parts map[int32]*partTrack
}

type partTrack struct {
	pending []int64 // offsets in arrival order (ascending)
	done    map[int64]bool
}

func newTracker() *tracker { return &tracker{parts: map[int32]*partTrack{}} }

func (t *tracker) start(p int32, off int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pt := t.parts[p]
	if pt == nil {
		pt = &partTrack{done: map[int64]bool{}}
		t.parts[p] = pt
	}
	pt.pending = append(pt.pending, off)
}

// finish marks off done and returns the offset to commit (next to read), or
// -1 when the committable prefix did not grow.
func (t *tracker) finish(p int32, off int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	pt := t.parts[p]
	if pt == nil {
		return -1
	}
	pt.done[off] = true
	commit := int64(-1)
	for len(pt.pending) > 0 && pt.done[pt.pending[0]] {
		commit = pt.pending[0] + 1
		delete(pt.done, pt.pending[0])
		pt.pending = pt.pending[1:]
	}
	return commit
}

// forget drops partitions this member no longer owns.
func (t *tracker) forget(parts []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range parts {
		delete(t.parts, p)
	}
}
