package blobstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/internal/scratch"
)

// journalKeys lists the keys of the records a scan of s's journal finds,
// as recovery would, in order.
func journalKeys(t *testing.T, s *FS) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(s.tmp, journalDirName, "journal-*"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, name := range segs {
		if err := scanSegment(name, func(sum, _ []byte) error {
			keys = append(keys, hex.EncodeToString(sum))
			return nil
		}); err != nil {
			t.Fatalf("scan %s: %v", name, err)
		}
	}
	return keys
}

// crash leaves s as a killed process would: its lock free, its temporary
// directory and journal in place.
func crash(t *testing.T, s *FS) {
	t.Helper()
	s.scratch.Abandon()
}

// waitFor polls cond, which reads state that another goroutine changes,
// until it holds; it fails the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// setupOpened is setup with the journal's first segment open: opening it
// syncs under the journal's lock, which a test's sync hook must not hold
// or count.
func setupOpened(t *testing.T, opts ...Option) *FS {
	t.Helper()
	s, _ := setup(t, opts...)
	if _, err := s.Put(context.Background(), bytes.NewReader([]byte("first"))); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJournalHoldsABlobBeforePutReturns(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	small, err := s.Put(ctx, bytes.NewReader([]byte("a small invoice")))
	if err != nil {
		t.Fatal(err)
	}
	large := bytes.Repeat([]byte("x"), int(DefaultJournalMax)+1)
	big, err := s.Put(ctx, bytes.NewReader(large))
	if err != nil {
		t.Fatal(err)
	}
	if got := journalKeys(t, s); !slices.Equal(got, []string{small.Key}) {
		t.Fatalf("journal records %v, want only the small blob %s (not %s, over the limit)", got, small.Key, big.Key)
	}
	if st := s.JournalStats(); st.Records != 1 || st.Syncs != 1 {
		t.Fatalf("stats %+v, want one record and one sync", st)
	}
	for _, b := range []Blob{small, big} {
		if _, err := s.Stat(ctx, b.Key); err != nil {
			t.Fatalf("Stat %s: %v", b.Key, err)
		}
	}
}

// Puts that arrive while a sync runs wait for it and share the next one.
func TestJournalSharesSyncs(t *testing.T) {
	t.Parallel()
	s := setupOpened(t)
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.journal.sync = func(f *os.File) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return fdatasync(f)
	}
	const later = 10
	errs := make(chan error, later+1)
	put := func(i int) {
		_, err := s.Put(ctx, bytes.NewReader(fmt.Appendf(nil, "invoice %d", i)))
		errs <- err
	}
	go put(0)
	<-entered
	for i := 1; i <= later; i++ {
		go put(i)
	}
	waitFor(t, "every Put's record", func() bool { return s.JournalStats().Records == later+2 })
	close(release)
	for range later + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := s.JournalStats(); st.Syncs != 3 {
		t.Fatalf("%d Puts took %d syncs, want 3: the first Put's, the held one, and one for the ten that waited", st.Records, st.Syncs)
	}
}

// A store that crashed leaves blobs whose files a machine crash may have
// lost or torn; the next NewFS restores them from its journal before it
// removes its temporary directory.
func TestNewFSRecoversACrashedStoresJournal(t *testing.T) {
	t.Parallel()
	a, dir := setup(t, JournalMax(64))
	ctx := context.Background()
	var blobs []Blob
	var bodies [][]byte
	for i := range 4 {
		body := fmt.Appendf(nil, "invoice number %d", i)
		b, err := a.Put(ctx, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		blobs, bodies = append(blobs, b), append(bodies, body)
	}
	crash(t, a)
	// What a power cut can leave of files whose data never reached the
	// disk: gone, empty, or the right size with other bytes.
	if err := os.Remove(a.path(blobs[0].Key)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a.path(blobs[1].Key), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.path(blobs[2].Key), make([]byte, len(bodies[2])), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, blob := range blobs {
		got, err := os.ReadFile(b.path(blob.Key))
		if err != nil || !bytes.Equal(got, bodies[i]) {
			t.Fatalf("blob %d after recovery: %q, %v; want %q", i, got, err, bodies[i])
		}
	}
	if _, err := os.Stat(a.tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the crashed store's directory survived recovery: %v", err)
	}
	if left := files(t, filepath.Join(dir, tmpDirName)); len(left) != 0 {
		t.Fatalf("left in tmp: %v", left)
	}
}

// With segments that fill after a few blobs, the journal goes round them
// many times while Puts run concurrently. Every blob must be readable, and
// a crash must find in the journal only the records of each segment's
// current lap: those of earlier laps were checkpointed, and recovering
// them would mean a lap's epoch failed to retire them.
func TestJournalLapsUnderConcurrentPuts(t *testing.T) {
	t.Parallel()
	const max = 128
	seg := int64(segHeader + 8*(recHeader+max))
	s, dir := setup(t, JournalMax(max), JournalSegment(seg))
	ctx := context.Background()
	const workers, each = 8, 40
	var mu sync.Mutex
	bodies := map[string][]byte{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Appendf(nil, "worker %d, invoice %d", w, i)
				b, err := s.Put(ctx, bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				bodies[b.Key] = body
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// A checkpoint may still run; once it ends, its lap's records are
	// retired, so the current laps are read after.
	waitFor(t, "the last checkpoint", func() bool {
		s.journal.mu.Lock()
		defer s.journal.mu.Unlock()
		return !slices.ContainsFunc(s.journal.segs[:], func(g *segment) bool { return g != nil && g.busy })
	})
	st := s.JournalStats()
	if st.Records != workers*each || st.Checkpoints < 2 {
		t.Fatalf("stats %+v, want %d records and several checkpoints", st, workers*each)
	}
	current := journalKeys(t, s)
	// A record is at least its header and the shortest body, 19 bytes.
	if most := 2 * int(seg-segHeader) / (recHeader + 19); len(current) == 0 || len(current) > most {
		t.Fatalf("the journal's current laps hold %d records, want 1 to %d (what two segments hold)", len(current), most)
	}
	crash(t, s)
	for key := range bodies {
		if err := os.Remove(s.path(key)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	var back []string
	for key, body := range bodies {
		got, err := os.ReadFile(r.path(key))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("recovered %s: %q, %v; want %q", key, got, err, body)
		}
		back = append(back, key)
	}
	slices.Sort(back)
	slices.Sort(current)
	if !slices.Equal(back, slices.Compact(current)) {
		t.Fatalf("recovered %d blobs, want exactly the %d of the current laps", len(back), len(current))
	}
}

// A failed fdatasync poisons the journal: the Put that saw it, and every
// later one, syncs its own file and directory instead.
func TestJournalFailureFallsBackToSyncingEachBlob(t *testing.T) {
	t.Parallel()
	s := setupOpened(t)
	ctx := context.Background()
	s.journal.sync = func(*os.File) error { return errors.New("disk said no") }
	var synced int
	s.syncDir = func(dir string) error {
		synced++
		return syncDir(dir)
	}
	for i := range 3 {
		b, err := s.Put(ctx, bytes.NewReader(fmt.Appendf(nil, "invoice %d", i)))
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
		if _, err := s.Stat(ctx, b.Key); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.JournalStats(); st.Records != 2 || st.Syncs != 2 {
		t.Fatalf("stats %+v: want the first Put's record, the one whose sync failed, then none", st)
	}
	if synced != 3 {
		t.Fatalf("%d directory syncs, want one per Put", synced)
	}
}

// segmentBytes builds a segment of the given epoch holding recs.
func segmentBytes(epoch uint64, recs ...[]byte) []byte {
	b := make([]byte, segHeader)
	binary.LittleEndian.PutUint32(b, segMagic)
	binary.LittleEndian.PutUint64(b[4:], epoch)
	for _, r := range recs {
		b = append(b, r...)
	}
	return append(b, make([]byte, 256)...) // the zeros ahead
}

func record(epoch uint64, data []byte, sum [32]byte) []byte {
	h := make([]byte, recHeader)
	binary.LittleEndian.PutUint32(h, recMagic)
	binary.LittleEndian.PutUint64(h[4:], epoch)
	binary.LittleEndian.PutUint32(h[12:], uint32(len(data)))
	copy(h[16:], sum[:])
	return append(h, data...)
}

func TestScanSegmentStopsAtTheFirstRecordThatIsNotOne(t *testing.T) {
	t.Parallel()
	one, two, three := []byte("one"), []byte("two"), []byte("three")
	good := func(e uint64, d []byte) []byte { return record(e, d, sha256.Sum256(d)) }
	long := good(7, two)
	binary.LittleEndian.PutUint32(long[12:], 1<<20)
	cases := []struct {
		name string
		seg  []byte
		want []string
	}{
		{"whole", segmentBytes(7, good(7, one), good(7, two), good(7, three)), []string{"one", "two", "three"}},
		{"torn", segmentBytes(7, good(7, one), record(7, two, sha256.Sum256(three)), good(7, three)), []string{"one"}},
		{"an earlier lap", segmentBytes(7, good(7, one), good(6, two), good(7, three)), []string{"one"}},
		{"past the end", segmentBytes(7, good(7, one), long), []string{"one"}},
		{"no header", append(make([]byte, segHeader), good(7, one)...), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			name := filepath.Join(t.TempDir(), "journal-0")
			if err := os.WriteFile(name, c.seg, 0o600); err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := scanSegment(name, func(_, data []byte) error {
				got = append(got, string(data))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("scan found %q, want %q", got, c.want)
			}
		})
	}
}

func TestNewFSRejectsASegmentTooSmallForItsBlobs(t *testing.T) {
	t.Parallel()
	if _, err := NewFS(t.TempDir(), JournalMax(1<<20), JournalSegment(1<<20)); err == nil {
		t.Fatal("NewFS accepted a 1 MiB segment for 1 MiB blobs and their headers")
	}
	if _, err := NewFS(t.TempDir(), JournalWatch(-time.Second)); err == nil {
		t.Fatal("NewFS accepted a negative watch interval")
	}
}

// A Put that finds its content stored journals it again rather than
// syncing a directory: the file found may be another Put's that is
// durable only through that Put's record, in another store's journal.
func TestJournaledPutOfStoredContentSyncsNoDirectory(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	var synced int
	s.syncDir = func(dir string) error {
		synced++
		return syncDir(dir)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := s.Put(ctx, bytes.NewReader([]byte("the same invoice"))); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.JournalStats(); st.Records != 2 || synced != 0 {
		t.Fatalf("stats %+v and %d directory syncs; want two records and none", st, synced)
	}
}

// A dead store's directory whose lock file is gone is still recovered
// before it is removed.
func TestNewFSRecoversAJournalWithoutItsLockFile(t *testing.T) {
	t.Parallel()
	a, dir := setup(t)
	body := []byte("an invoice whose lock file was lost")
	b, err := a.Put(context.Background(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	crash(t, a)
	if err := os.Remove(a.tmp + scratch.LockSuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a.path(b.Key)); err != nil {
		t.Fatal(err)
	}
	r, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(r.path(b.Key)); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("after recovery: %q, %v", got, err)
	}
	if _, err := os.Stat(a.tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stray directory survived: %v", err)
	}
}
