package blobstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/internal/logtest"
	"github.com/docket/docket/internal/scratch"
)

// TestCloseLogsNothing: a store that closes with its journal whole has
// nothing to report, though closing fails the journal so that nothing
// appends.
func TestCloseLogsNothing(t *testing.T) {
	t.Parallel()
	var logged logtest.Buffer
	s, _ := setup(t, Logger(zerolog.New(&logged)))
	if _, err := s.Put(context.Background(), bytes.NewReader([]byte("kept"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.JournalStats(); st.Records != 1 || logged.String() != "" {
		t.Fatalf("stats %+v, logged %q", st, logged.String())
	}
}

// counted replaces s's checkpoint and directory sync with counting ones
// that still do the work.
func counted(s *FS) (checkpoints, dirSyncs *atomic.Int32) {
	checkpoints, dirSyncs = new(atomic.Int32), new(atomic.Int32)
	setCheckpoint(s, func(f *os.File, paths []string) error {
		checkpoints.Add(1)
		return checkpointFiles(f, paths)
	})
	s.syncDir = func(dir string) error {
		dirSyncs.Add(1)
		return syncDir(dir)
	}
	return checkpoints, dirSyncs
}

// TestJournalRemovedUnderTheStore: someone removes a running store's
// temporary directory, journal and all. The next Put notices before it is
// acknowledged, makes the blobs the lost records held durable (one
// checkpoint), and syncs its own file instead; so does every Put after it.
func TestJournalRemovedUnderTheStore(t *testing.T) {
	t.Parallel()
	s := setupOpened(t, JournalWatch(0)) // the Puts, not the watch, notice
	ctx := context.Background()
	checkpoints, dirSyncs := counted(s)
	if err := os.RemoveAll(s.tmp); err != nil {
		t.Fatal(err)
	}
	for i, content := range []string{"second", "third"} {
		b, err := s.Put(ctx, bytes.NewReader([]byte(content)))
		if err != nil {
			t.Fatalf("Put %q: %v", content, err)
		}
		if _, err := s.Stat(ctx, b.Key); err != nil {
			t.Fatal(err)
		}
		if got := dirSyncs.Load(); got != int32(i+1) {
			t.Fatalf("after Put %q: %d directory syncs, want %d: it must sync its own blob", content, got, i+1)
		}
	}
	if err := s.journal.failure(); !errors.Is(err, errJournalUnlinked) {
		t.Fatalf("journal failure %v, want %v", err, errJournalUnlinked)
	}
	if got := checkpoints.Load(); got != 1 {
		t.Fatalf("%d checkpoints, want one rescue of the first blob", got)
	}
	// The first Put's record, and the second's, written to the removed
	// segment before its sync found it gone; none for the third.
	if st := s.JournalStats(); st.Records != 2 {
		t.Fatalf("stats %+v, want 2 records", st)
	}
}

// TestCloseLeavesNothingToRecover: Close makes the journal's blobs durable
// with one checkpoint and removes the store's temporary directory and lock,
// so a store opened next finds only its own; later Puts fail, reads work.
func TestCloseLeavesNothingToRecover(t *testing.T) {
	t.Parallel()
	s := setupOpened(t)
	ctx := context.Background()
	checkpoints, _ := counted(s)
	want := map[string][]byte{}
	for _, c := range []string{"a", "bb", "ccc"} {
		b, err := s.Put(ctx, bytes.NewReader([]byte(c)))
		if err != nil {
			t.Fatal(err)
		}
		want[b.Key] = []byte(c)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := checkpoints.Load(); got != 1 {
		t.Fatalf("%d checkpoints at Close, want 1", got)
	}
	for _, p := range []string{s.tmp, s.tmp + scratch.LockSuffix} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after Close: %v", p, err)
		}
	}
	if _, err := s.Put(ctx, bytes.NewReader([]byte("late"))); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v, want %v", err, ErrClosed)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for key, content := range want {
		r, err := s.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%s after Close: %q, %v", key, got, err)
		}
	}
	next, err := NewFS(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	left, err := os.ReadDir(filepath.Join(s.dir, tmpDirName))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		if p := filepath.Join(s.dir, tmpDirName, e.Name()); p != next.tmp && p != next.tmp+scratch.LockSuffix {
			t.Errorf("left for the next store: %s", e.Name())
		}
	}
}

// blockingReader returns its first byte, then blocks until released.
type blockingReader struct {
	reading chan struct{} // closed at the first Read
	release chan struct{}
	n       int
}

func (r *blockingReader) Read(p []byte) (int, error) {
	switch r.n++; r.n {
	case 1:
		close(r.reading)
		p[0] = 'x'
		return 1, nil
	case 2:
		<-r.release
	}
	return 0, io.EOF
}

// TestCloseWaitsForPutsInFlight: a Put that is reading its body when Close
// is called finishes, acknowledged and durable, before Close returns.
func TestCloseWaitsForPutsInFlight(t *testing.T) {
	t.Parallel()
	s := setupOpened(t)
	r := &blockingReader{reading: make(chan struct{}), release: make(chan struct{})}
	var order []string
	var mu sync.Mutex
	note := func(what string) {
		mu.Lock()
		order = append(order, what)
		mu.Unlock()
	}
	put := make(chan error)
	go func() {
		_, err := s.Put(context.Background(), r)
		note("put")
		put <- err
	}()
	<-r.reading
	closed := make(chan error)
	go func() {
		err := s.Close()
		note("close")
		closed <- err
	}()
	// Close waits for the lock the Put holds: then no reader gets it.
	waitFor(t, "Close to wait", func() bool {
		if s.live.TryRLock() {
			s.live.RUnlock()
			return false
		}
		return true
	})
	close(r.release)
	if err := <-put; err != nil {
		t.Fatalf("the Put in flight: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "put" {
		t.Fatalf("order %v, want the Put before Close", order)
	}
}

// BenchmarkReopen opens a store on the directory of one that held 1,900
// journaled blobs of 16 KiB (31 MiB of records, all in its first segment) and
// stopped: after Close, or as a crash leaves it (the lock free, the
// journal in place), when NewFS hashes every record's blob again before it
// returns.
func BenchmarkReopen(b *testing.B) {
	for _, stop := range []string{"closed", "crashed"} {
		b.Run(stop, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s, dir := setup(b)
				blob := make([]byte, 16<<10)
				for i := range 1900 {
					blob[0], blob[1] = byte(i), byte(i>>8)
					if _, err := s.Put(context.Background(), bytes.NewReader(blob)); err != nil {
						b.Fatal(err)
					}
				}
				if stop == "closed" {
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
				} else {
					s.scratch.Abandon()
				}
				b.StartTimer()
				next, err := NewFS(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				next.Close()
				b.StartTimer()
			}
		})
	}
}

// TestJournalRescueFailureFailsThePut: when the checkpoint that rescues a
// removed journal's blobs fails, the Put that ran it fails too, rather than
// be acknowledged while earlier blobs may not be on the disk; the Puts
// after it sync their own files.
func TestJournalRescueFailureFailsThePut(t *testing.T) {
	t.Parallel()
	s := setupOpened(t, JournalWatch(0))
	ctx := context.Background()
	broken := errors.New("disk said no")
	setCheckpoint(s, func(*os.File, []string) error { return broken })
	if err := os.RemoveAll(s.tmp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, bytes.NewReader([]byte("second"))); !errors.Is(err, broken) {
		t.Fatalf("Put that ran the failed rescue: %v, want %v", err, broken)
	}
	b, err := s.Put(ctx, bytes.NewReader([]byte("third")))
	if err != nil {
		t.Fatalf("the Put after it: %v", err)
	}
	if _, err := s.Stat(ctx, b.Key); err != nil {
		t.Fatal(err)
	}
}

// setCheckpoint replaces s's checkpoint under the journal's lock, which the
// watch takes before it can rescue, so that the race detector sees the
// watch read the replacement after it was written.
func setCheckpoint(s *FS, fn func(f *os.File, paths []string) error) {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	s.journal.checkpoint = fn
}

// TestJournalWatchFindsARemovalWithoutUploads: the store's temporary
// directory, journal and all, is removed while no upload arrives. The
// watch notices within its interval, makes the blob the journal held
// durable (one checkpoint), and fails the journal,
// so the next Put writes no record and syncs its own directory.
func TestJournalWatchFindsARemovalWithoutUploads(t *testing.T) {
	t.Parallel()
	var logged logtest.Buffer
	s, _ := setup(t, JournalWatch(5*time.Millisecond), Logger(zerolog.New(&logged)))
	ctx := context.Background()
	_, err := s.Put(ctx, bytes.NewReader([]byte("first")))
	if err != nil {
		t.Fatal(err)
	}
	rescued := make(chan struct{}, 2)
	setCheckpoint(s, func(f *os.File, paths []string) error {
		err := checkpointFiles(f, paths)
		rescued <- struct{}{}
		return err
	})
	dirSyncs := new(atomic.Int32)
	s.syncDir = func(dir string) error {
		dirSyncs.Add(1)
		return syncDir(dir)
	}
	if err := os.RemoveAll(s.tmp); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rescued:
	case <-time.After(30 * time.Second):
		t.Fatalf("no rescue 30 s after the removal: %+v", s.JournalStats())
	}
	// The stats say so once the checkpoint has returned; the watch sets
	// them just after.
	var st JournalStats
	for deadline := time.Now().Add(30 * time.Second); !st.Rescued && time.Now().Before(deadline); {
		runtime.Gosched()
		st = s.JournalStats()
	}
	if !st.Failed || !st.Rescued || st.RescueFailed || st.Records != 1 || len(rescued) != 0 {
		t.Fatalf("stats %+v, %d more checkpoints; want failed, rescued once, one record", st, len(rescued))
	}
	if err := s.journal.failure(); !errors.Is(err, errJournalUnlinked) {
		t.Fatalf("journal failure %v, want %v", err, errJournalUnlinked)
	}
	// An operator hears of both: the failure with its cause, then the
	// rescue.
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"level":"error"`) || !strings.Contains(lines[0], errJournalUnlinked.Error()) ||
		!strings.Contains(lines[1], `"level":"warn"`) || !strings.Contains(lines[1], "durable on their own") {
		t.Fatalf("logged:\n%s", logged.String())
	}
	b, err := s.Put(ctx, bytes.NewReader([]byte("second")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, b.Key); err != nil {
		t.Fatal(err)
	}
	if got, st := dirSyncs.Load(), s.JournalStats(); got != 1 || st.Records != 1 {
		t.Fatalf("after the removal a Put synced %d directories and the journal holds %d records; want 1 and 1", got, st.Records)
	}
}

// TestCloseWaitsForTheWatchsRescue: Close stops the watch, and waits for a
// rescue in flight before it closes the segments the rescue syncs; the
// failed journal is then left for recovery, and Close says why.
func TestCloseWaitsForTheWatchsRescue(t *testing.T) {
	t.Parallel()
	s := setupOpened(t, JournalWatch(time.Millisecond))
	entered, release := make(chan struct{}), make(chan struct{})
	setCheckpoint(s, func(f *os.File, paths []string) error {
		close(entered)
		<-release
		return checkpointFiles(f, paths)
	})
	if err := os.RemoveAll(s.tmp); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not rescue within 30 s of the removal")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the rescue was still running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-closed; !errors.Is(err, errJournalUnlinked) {
		t.Fatalf("Close: %v, want %v", err, errJournalUnlinked)
	}
	if st := s.JournalStats(); !st.Failed || !st.Rescued {
		t.Fatalf("stats after Close %+v, want failed and rescued", st)
	}
}
