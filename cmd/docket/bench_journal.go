package main

import (
	"fmt"

	"github.com/docket/docket/blobstore"
)

// blobJournal is what the blob store's journal did during a loop: how many
// uploads one fdatasync made durable is what the journal is for.
type blobJournal struct {
	Records        uint64  `json:"records"`
	Syncs          uint64  `json:"syncs"`
	Checkpoints    uint64  `json:"checkpoints"`
	RecordsPerSync float64 `json:"records_per_sync"`
}

func (j *blobJournal) String() string {
	return fmt.Sprintf("%d uploads made durable by %d fdatasyncs (%.1f each), %d checkpoints",
		j.Records, j.Syncs, j.RecordsPerSync, j.Checkpoints)
}

// journalStats reads the journal's counts; false for a store without one
// (S3).
func journalStats(s blobstore.Store) (blobstore.JournalStats, bool) {
	fs, ok := s.(interface{ JournalStats() blobstore.JournalStats })
	if !ok {
		return blobstore.JournalStats{}, false
	}
	return fs.JournalStats(), true
}

// journalUse is the journal's work between two readings; nil when it did
// none (the journal is off, or no upload was small enough).
func journalUse(before, after blobstore.JournalStats) *blobJournal {
	j := &blobJournal{
		Records:     after.Records - before.Records,
		Syncs:       after.Syncs - before.Syncs,
		Checkpoints: after.Checkpoints - before.Checkpoints,
	}
	if j.Records == 0 {
		return nil
	}
	if j.Syncs > 0 {
		j.RecordsPerSync = float64(j.Records) / float64(j.Syncs)
	}
	return j
}
