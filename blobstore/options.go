package blobstore

import (
	"time"

	"github.com/rs/zerolog"
)

// DefaultMaxSize is the size limit used when MaxSize is not given: 25 MiB.
const DefaultMaxSize int64 = 25 << 20

// Option configures a store created by NewFS.
type Option func(*config)

type config struct {
	maxSize        int64
	journalMax     int64
	journalSegment int64
	journalWatch   time.Duration
	log            zerolog.Logger
}

func defaultConfig() config {
	return config{maxSize: DefaultMaxSize, journalMax: DefaultJournalMax, journalSegment: DefaultJournalSegment,
		journalWatch: DefaultJournalWatch, log: zerolog.Nop()}
}

// MaxSize sets the largest blob Put accepts, in bytes. The default is
// DefaultMaxSize (25 MiB). A body of exactly n bytes is accepted; n+1 bytes
// is ErrTooLarge. NewFS rejects n <= 0.
func MaxSize(n int64) Option {
	return func(c *config) { c.maxSize = n }
}

// JournalMax sets the largest blob made durable through the store's
// journal, with an fdatasync shared by concurrent Puts, instead of an fsync
// of its own file and directory (journal.go). The default is
// DefaultJournalMax (1 MiB); 0 turns the journal off.
func JournalMax(n int64) Option {
	return func(c *config) { c.journalMax = n }
}

// JournalSegment sets the size of each of the journal's two segments: the
// store makes the blobs of a full segment durable on their own and then
// reuses it. The default is DefaultJournalSegment (32 MiB). NewFS rejects
// a size that cannot hold a blob of JournalMax bytes and its header.
func JournalSegment(n int64) Option {
	return func(c *config) { c.journalSegment = n }
}

// DefaultJournalWatch is how often the journal checks that its segments are
// still in the filesystem unless JournalWatch says otherwise: every second.
const DefaultJournalWatch = time.Second

// JournalWatch sets how often the journal checks, between the syncs of
// Puts (which check too), that its segments are still in the filesystem.
// If one was removed (a cleaner of temporary files, an operator), the
// journal fails and makes the blobs it held durable on their own, so a
// removal is caught within this interval even while no upload arrives;
// until then a machine crash could lose those blobs' bytes. The default
// is DefaultJournalWatch (1 s); 0 turns the watch off.
func JournalWatch(d time.Duration) Option {
	return func(c *config) { c.journalWatch = d }
}

// Logger sets where the store reports what an operator must hear of
// without asking: its journal failing, and whether the blobs the journal
// held were made durable on their own after its segment was removed.
// The metrics say the same (JournalStats); a log line says when, and why.
// The default discards them.
func Logger(l zerolog.Logger) Option {
	return func(c *config) { c.log = l }
}
