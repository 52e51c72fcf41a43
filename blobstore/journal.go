package blobstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// The journal makes small blobs durable with an fdatasync that concurrent
// Puts share. Without it every upload paid two fsyncs of its own (its file
// and its shard directory), each a metadata write (on a journaled
// filesystem, a commit of its journal) with a cache flush, and on this
// project's 2-core VM those writes stalled the whole machine's I/O: GET
// p99 28–136 ms with the blobs on the disk against 5.6–10.6 ms with them on
// tmpfs (BENCHMARKS.md).
//
// A Put of at most the journal's limit appends its bytes, with its key, to
// the current segment, waits for a group fdatasync to cover them, and only
// then renames its unsynced temporary file into place. Every blob visible
// under a key is therefore either durable itself or has a durable record in
// a live journal. The segments are zeroed ahead of the records, so the
// fdatasync that covers a record writes data blocks only: no inode change
// (no commit of a filesystem's journal), except once per growth step.
//
// Two segments alternate. When one is full, new records go to the other,
// and a goroutine checkpoints the full one: it waits until every Put with a
// record in it has renamed its file, makes those files durable (syncfs(2)
// on Linux, an fsync per file and directory elsewhere), and starts the
// segment's next lap under a new epoch. Records of an earlier lap are never
// read again: a record counts only if it carries its segment's epoch, and
// its key is the SHA-256 of its bytes, so a torn record never passes.
//
// A store that crashed leaves its journal in its temporary directory, with
// its lock free; the next NewFS on the directory rewrites every record's
// blob that is missing or damaged, makes them durable, and only then
// removes the directory (recover.go).

const (
	// segHeader is the bytes at the start of a segment: magic, epoch,
	// padded to a block.
	segHeader = 4096
	// recHeader is a record's magic, epoch, length and raw SHA-256.
	recHeader = 4 + 8 + 4 + sha256Size
	// growStep is how far a segment grows at a time, with zeros: one
	// metadata commit per step instead of one per record.
	growStep   = 1 << 20
	sha256Size = 32
	segMagic   = 0x444b4a53 // "DKJS"
	recMagic   = 0x444b4a52 // "DKJR"
)

// DefaultJournalMax is the largest blob the journal takes unless
// JournalMax says otherwise: 1 MiB. Larger blobs are fsynced on their own:
// their data dominates the cost, and copying them into the journal too
// would double it.
const DefaultJournalMax int64 = 1 << 20

// DefaultJournalSegment is the size of each of the journal's two segments
// unless JournalSegment says otherwise: 32 MiB, a checkpoint every 32 MiB
// of small uploads.
const DefaultJournalSegment int64 = 32 << 20

// errJournalFailed is what every journal call returns once an fdatasync or
// a checkpoint has failed: after a failed fsync the kernel may have dropped
// the dirty pages, so nothing written since can be trusted to the journal,
// and Put falls back to syncing its own file.
var errJournalFailed = errors.New("blobstore: journal failed")

// errJournalUnlinked is the journal's failure when its segment is no longer
// in the filesystem: someone removed the store's temporary directory under
// it (a cleaner of temp files, an operator). A crash would then take the
// segment with it, and recovery would find no record to restore blobs
// from.
var errJournalUnlinked = errors.New("blobstore: journal segment removed from under the store")

type journal struct {
	dir     string
	segSize int64
	log     zerolog.Logger
	// sync is fdatasync (tests replace it to hold a sync open).
	sync func(*os.File) error
	// checkpoint makes the files renamed during a lap durable.
	checkpoint func(f *os.File, paths []string) error
	// linked reports whether f still has a name in the filesystem.
	linked func(f *os.File) (bool, error)

	mu     sync.Mutex
	cond   *sync.Cond // a sync or a checkpoint finished
	segs   [2]*segment
	cur    int
	failed error

	records, syncs, checkpoints atomic.Uint64
	// rescued is set by whoever found the journal unlinked first, a Put
	// (append) or the watch, which then makes the blobs it held durable
	// on their own (rescue).
	rescued atomic.Bool
	// rescueOK and rescueFailed say how that ended: after a failure, a
	// crash may take the bytes of blobs stored before the removal.
	rescueOK, rescueFailed atomic.Bool
	// closedOK is set by a close that found the journal working; the
	// failure close leaves behind is then no failure to report. j.mu.
	closedOK bool

	// stop ends the watch, which watching counts; nil without one.
	stop     chan struct{}
	watching sync.WaitGroup
}

type segment struct {
	name   string
	f      *os.File
	epoch  uint64
	pos    int64 // where the next record goes
	size   int64 // bytes zeroed so far (the file's size)
	synced int64 // the end of what an fdatasync covered, this lap
	// syncing is set while an fdatasync of this segment runs; Puts that
	// need more than it covers wait for the next.
	syncing bool
	// busy is set while the segment is checkpointed.
	busy bool
	lap  *lap
}

// lap is one pass over a segment: the Puts with a record in it that have
// not renamed their file yet, and (where checkpoint needs them) the paths
// they renamed.
type lap struct {
	inflight sync.WaitGroup
	mu       sync.Mutex
	paths    []string
}

// newJournal makes a journal in dir. With every > 0 it checks that often,
// between the syncs of Puts, that its segments are still in the
// filesystem (watch).
func newJournal(dir string, segSize int64, every time.Duration, log zerolog.Logger) (*journal, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("blobstore: create journal dir: %w", err)
	}
	j := &journal{dir: dir, segSize: segSize, sync: fdatasync, checkpoint: checkpointFiles, linked: linked, log: log}
	j.cond = sync.NewCond(&j.mu)
	if every > 0 {
		j.stop = make(chan struct{})
		j.watching.Go(func() { j.watch(every) })
	}
	return j, nil
}

// append writes rec, a record whose first recHeader bytes it fills in
// (the blob's bytes follow them; see capture), under sum into the journal
// and returns once it is durable. done must be called after the blob's
// file is renamed into place (with its path) or was found there, and after
// a failure too (with ""): the segment's checkpoint waits for it.
func (j *journal) append(sum []byte, rec []byte) (done func(path string), err error) {
	n := int64(len(rec))
	j.mu.Lock()
	s, err := j.reserve(n)
	if err != nil {
		j.mu.Unlock()
		return nil, err
	}
	off, l := s.pos, s.lap
	l.inflight.Add(1)
	done = func(path string) {
		if path != "" && needPaths {
			l.mu.Lock()
			l.paths = append(l.paths, path)
			l.mu.Unlock()
		}
		l.inflight.Done()
	}
	binary.LittleEndian.PutUint32(rec[0:], recMagic)
	binary.LittleEndian.PutUint64(rec[4:], s.epoch)
	binary.LittleEndian.PutUint32(rec[12:], uint32(len(rec)-recHeader))
	copy(rec[16:recHeader], sum)
	// Records are written in order, under the lock, so what a crash leaves
	// is a prefix of them plus at most one group that no sync covered.
	if _, err := s.f.WriteAt(rec, off); err != nil {
		j.fail(fmt.Errorf("blobstore: write journal: %w", err))
		j.mu.Unlock()
		done("")
		return nil, errJournalFailed
	}
	s.pos += n
	j.records.Add(1)
	err = j.syncTo(s, s.pos)
	j.mu.Unlock()
	if err != nil {
		done("")
		// The first to find the segment unlinked makes durable on their
		// own the blobs whose records went with it: a crash would lose
		// them. Until it is done, a crash still can. If this Put does it
		// and it fails, so does this Put.
		if rerr := j.rescue(); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	return done, nil
}

// failure is the journal's sticky error, nil while it works.
func (j *journal) failure() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failed
}

// checkpointAll waits for running checkpoints and for the Puts with a
// record in either lap, then makes all their files durable at once. The
// journal has failed or is closing, so no Put starts a record meanwhile.
func (j *journal) checkpointAll() error {
	j.mu.Lock()
	for j.busy() {
		j.cond.Wait()
	}
	segs := j.segs
	j.mu.Unlock()
	var paths []string
	var f *os.File
	for _, s := range segs {
		if s == nil {
			continue
		}
		s.lap.inflight.Wait()
		s.lap.mu.Lock()
		paths = append(paths, s.lap.paths...)
		s.lap.mu.Unlock()
		f = s.f
	}
	if f == nil {
		return nil
	}
	if err := j.checkpoint(f, paths); err != nil {
		return fmt.Errorf("blobstore: checkpoint journal: %w", err)
	}
	return nil
}

// busy reports whether a segment's checkpoint runs. j.mu is held.
func (j *journal) busy() bool {
	for _, s := range j.segs {
		if s != nil && s.busy {
			return true
		}
	}
	return false
}

// close makes every blob the journal holds durable on its own and closes
// its segments; a failed journal is left as it is, for recovery. No Put
// may be in flight.
func (j *journal) close() error {
	if j.stop != nil {
		// The watch may be rescuing; the segments stay open until it is
		// done.
		close(j.stop)
		j.watching.Wait()
		j.stop = nil
	}
	j.mu.Lock()
	failed := j.failed
	j.fail(errJournalFailed) // nothing appends from now on
	j.closedOK = failed == nil
	j.mu.Unlock()
	err := failed
	if err == nil {
		err = j.checkpointAll()
	}
	for _, s := range j.segs {
		if s != nil {
			s.f.Close()
		}
	}
	return err
}

// reserve returns the segment the next n bytes go to, grown to hold them.
// j.mu is held.
func (j *journal) reserve(n int64) (*segment, error) {
	for {
		if j.failed != nil {
			return nil, errJournalFailed
		}
		s := j.segs[j.cur]
		if s == nil {
			var err error
			if s, err = j.open(j.cur); err != nil {
				j.fail(err)
				return nil, errJournalFailed
			}
		}
		if s.busy {
			j.cond.Wait() // the other segment filled before this one's checkpoint ended
			continue
		}
		if s.pos+n > j.segSize {
			if s.pos == segHeader {
				return nil, fmt.Errorf("blobstore: a %d-byte record does not fit a %d-byte journal segment", n, j.segSize)
			}
			s.busy = true
			go j.checkpointSegment(s)
			j.cur = 1 - j.cur
			continue
		}
		if s.pos+n > s.size {
			if err := j.grow(s, s.pos+n); err != nil {
				j.fail(err)
				return nil, errJournalFailed
			}
		}
		return s, nil
	}
}

// open creates segment i's file with its first header. j.mu is held.
func (j *journal) open(i int) (*segment, error) {
	name := filepath.Join(j.dir, fmt.Sprintf("journal-%d", i))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("blobstore: create journal segment: %w", err)
	}
	s := &segment{name: name, f: f, epoch: 1, lap: &lap{}}
	if err := j.grow(s, segHeader); err != nil {
		f.Close()
		return nil, err
	}
	if err := writeSegHeader(f, s.epoch); err != nil {
		f.Close()
		return nil, err
	}
	// The segment must be found after a crash before any record in it
	// counts: its name, and the names of the directories above it up to
	// tmp/, whose lock file tells the sweep to recover it rather than
	// remove it as a stray. This happens twice in a store's life.
	if err := j.sync(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("blobstore: sync journal segment: %w", err)
	}
	for _, d := range []string{j.dir, filepath.Dir(j.dir), filepath.Dir(filepath.Dir(j.dir))} {
		if err := syncDir(d); err != nil {
			f.Close()
			return nil, err
		}
	}
	s.pos, s.synced = segHeader, segHeader
	j.segs[i] = s
	return s, nil
}

// grow zeroes the segment up to at least end, a growth step at a time.
// Written zeros, not fallocate: an allocated but unwritten extent changes
// on its first write, and every fdatasync would then write that metadata
// change too.
func (j *journal) grow(s *segment, end int64) error {
	to := min(max(end, s.size+growStep), j.segSize)
	zeros := make([]byte, to-s.size)
	if _, err := s.f.WriteAt(zeros, s.size); err != nil {
		return fmt.Errorf("blobstore: grow journal segment: %w", err)
	}
	s.size = to
	return nil
}

func writeSegHeader(f *os.File, epoch uint64) error {
	var hdr [12]byte
	binary.LittleEndian.PutUint32(hdr[0:], segMagic)
	binary.LittleEndian.PutUint64(hdr[4:], epoch)
	if _, err := f.WriteAt(hdr[:], 0); err != nil {
		return fmt.Errorf("blobstore: write journal header: %w", err)
	}
	return nil
}

// syncTo returns once an fdatasync of s has covered its bytes up to end.
// The first Put to find no sync running runs one for everything written so
// far; those arriving meanwhile wait and share the next. j.mu is held.
func (j *journal) syncTo(s *segment, end int64) error {
	for s.synced < end {
		if j.failed != nil {
			return errJournalFailed
		}
		if s.syncing {
			j.cond.Wait()
			continue
		}
		s.syncing = true
		target := s.pos
		j.mu.Unlock()
		err := j.sync(s.f)
		var ok bool
		if err == nil {
			// After the sync, so that a removal it did not see is caught
			// before the Puts it covered are acknowledged.
			ok, err = j.linked(s.f)
		}
		j.mu.Lock()
		s.syncing = false
		j.syncs.Add(1)
		if err != nil {
			j.fail(fmt.Errorf("blobstore: sync journal: %w", err))
			return errJournalFailed
		}
		if !ok {
			j.fail(fmt.Errorf("%w: %s", errJournalUnlinked, s.name))
			return errJournalFailed
		}
		s.synced = max(s.synced, target)
		j.cond.Broadcast()
	}
	return nil
}

// checkpointSegment makes the blobs of s's lap durable on their own, then
// starts its next lap. It runs in a goroutine of its own.
func (j *journal) checkpointSegment(s *segment) {
	l := s.lap
	l.inflight.Wait()
	err := j.checkpoint(s.f, l.paths)
	if err == nil {
		// The new epoch need not be synced here: the first sync of the
		// next lap covers it, and until then no record of the new epoch
		// is acknowledged.
		err = writeSegHeader(s.f, s.epoch+1)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		j.fail(fmt.Errorf("blobstore: checkpoint journal: %w", err))
	} else {
		s.epoch++
		s.pos, s.synced = segHeader, segHeader
		s.lap = &lap{}
		j.checkpoints.Add(1)
	}
	s.busy = false
	j.cond.Broadcast()
}

// fail makes err sticky. j.mu is held.
func (j *journal) fail(err error) {
	if j.failed == nil {
		j.failed = err
		// Close fails it too, so that nothing appends: not news.
		if !errors.Is(err, errJournalFailed) {
			j.log.Error().Err(err).Str("dir", j.dir).
				Msg("blob journal failed: every upload fsyncs its own file and directory until the store is opened again")
		}
	}
	j.cond.Broadcast()
}

// JournalStats counts what the journal did since the store opened.
type JournalStats struct {
	Records     uint64 // blobs made durable through the journal
	Syncs       uint64 // fdatasyncs that covered them
	Checkpoints uint64 // segments whose blobs were made durable on their own
	// Failed is set once the journal failed (a sync, a checkpoint, or its
	// segment removed from under the store): every Put since fsyncs its
	// own file and directory, until the store is opened again.
	Failed bool
	// Rescued is set when the journal's blobs were made durable on their
	// own after its segment was removed, RescueFailed when that failed:
	// a crash may then take the bytes of blobs stored before the removal.
	Rescued, RescueFailed bool
}

// JournalStats reports the journal's counts; all zero when it is off.
func (s *FS) JournalStats() JournalStats {
	if s.journal == nil {
		return JournalStats{}
	}
	return JournalStats{
		Records:      s.journal.records.Load(),
		Syncs:        s.journal.syncs.Load(),
		Checkpoints:  s.journal.checkpoints.Load(),
		Failed:       s.journal.broken(),
		Rescued:      s.journal.rescueOK.Load(),
		RescueFailed: s.journal.rescueFailed.Load(),
	}
}

// capture keeps a copy of what is written to it, up to limit bytes, after
// room for a record's header, so that the journal writes the record in one
// call without copying it again; over is set past the limit, and the copy
// is then dropped.
type capture struct {
	b     []byte // the header's room, then the bytes
	limit int64
	over  bool
}

func (c *capture) Write(p []byte) (int, error) {
	if !c.over {
		if int64(len(c.b)-recHeader+len(p)) > c.limit {
			c.over, c.b = true, c.b[:recHeader]
		} else {
			c.b = append(c.b, p...)
		}
	}
	return len(p), nil
}

var capturePool = sync.Pool{New: func() any { return &capture{b: make([]byte, 0, 4<<10)} }}

func getCapture(limit int64) *capture {
	c := capturePool.Get().(*capture)
	c.b, c.limit, c.over = c.b[:recHeader], limit, false
	return c
}

func putCapture(c *capture) {
	if cap(c.b) <= 64<<10 { // a pool of 1 MiB buffers would pin memory for rare large uploads
		capturePool.Put(c)
	}
}
