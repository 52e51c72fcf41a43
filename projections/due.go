package projections

import "sync"

// dueFloors keeps the scans of the due index (wq/<partition>/<time>/…)
// away from its dead head. Delivered notifications leave a tombstone at
// the front of their partition's range until compactions drop it, and a
// scan from the start of the range stepped over every one of them on each
// applied fetch: 5 % of the node's CPU under docket bench. A scan starts at
// the partition's floor instead: the time of the first live key the last
// scan met, lowered by every due key committed since.
type dueFloors struct {
	mu    sync.Mutex // also serialises the scans, so no floor is raised past a key another scan took
	floor map[int32]int64
	noted map[int32]int64 // earliest due time committed per partition since its last scan began
}

// note records, after a commit, the earliest due time it wrote per
// partition.
func (f *dueFloors) note(due map[int32]int64) {
	if len(due) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noted == nil {
		f.noted = map[int32]int64{}
	}
	for p, t := range due {
		if old, ok := f.noted[p]; !ok || t < old {
			f.noted[p] = t
		}
	}
}

// scan runs fn from the partition's floor (a time in Unix nanoseconds; 0
// for the start of the range). fn returns the time of the first live key
// it met, or MaxInt64 for none, which becomes the new floor.
func (f *dueFloors) scan(p int32, fn func(from int64) (first int64, err error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// A note only lowers a floor an earlier scan set. Without one (the
	// first scan since the views were opened) the scan starts at the
	// beginning: the views may hold due keys from before a restart that no
	// note covers, and a note from the tail re-applied since would skip them.
	from, ok := f.floor[p]
	if t, noted := f.noted[p]; noted && ok && t < from {
		from = t
	}
	delete(f.noted, p)
	first, err := fn(from)
	if err != nil {
		first = from // scan again from the same place
	}
	if f.floor == nil {
		f.floor = map[int32]int64{}
	}
	// Keys committed while fn ran are in noted for the next scan.
	f.floor[p] = first
	return err
}
