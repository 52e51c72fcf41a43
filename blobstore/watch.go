package blobstore

import (
	"errors"
	"fmt"
	"time"
)

// watch checks the segments' links every interval until the journal fails
// or stops. A Put's sync checks them too, but only when there are Puts:
// without the watch, a journal removed while no upload arrives would lose
// its blobs' bytes to a crash for as long as the quiet lasts.
func (j *journal) watch(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
		}
		if !j.stillLinked() {
			return
		}
	}
}

// stillLinked reports whether every open segment is still in the
// filesystem. If one is not, it fails the journal, so that Puts fsync their
// own files from then on, and rescues the blobs the journal held.
func (j *journal) stillLinked() bool {
	j.mu.Lock()
	if j.failed != nil {
		j.mu.Unlock()
		return false
	}
	segs := j.segs
	j.mu.Unlock()
	for _, s := range segs {
		if s == nil {
			continue
		}
		ok, err := j.linked(s.f)
		if err == nil && ok {
			continue
		}
		j.mu.Lock()
		if err != nil {
			j.fail(fmt.Errorf("blobstore: check journal: %w", err))
		} else {
			j.fail(fmt.Errorf("%w: %s", errJournalUnlinked, s.name))
		}
		j.mu.Unlock()
		_ = j.rescue() // counted in JournalStats; no caller to hand it to
		return false
	}
	return true
}

// rescue makes the blobs of an unlinked journal durable on their own, once,
// for whoever found the removal first; the others return nil. If it fails,
// nothing written is known to be on the disk.
func (j *journal) rescue() error {
	if !errors.Is(j.failure(), errJournalUnlinked) || !j.rescued.CompareAndSwap(false, true) {
		return nil
	}
	// Logged before the stats say so: whoever reads them then finds the
	// line.
	err := j.checkpointAll()
	if err != nil {
		j.log.Error().Err(err).Str("dir", j.dir).
			Msg("blob journal removed, and making the blobs it held durable on their own failed: a machine crash may lose the bytes of blobs stored before the removal")
		j.rescueFailed.Store(true)
	} else {
		j.log.Warn().Str("dir", j.dir).Msg("blob journal removed: the blobs it held are durable on their own")
		j.rescueOK.Store(true)
	}
	return err
}

// broken reports whether the journal failed while in use (not because it
// was closed).
func (j *journal) broken() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failed != nil && !j.closedOK
}
