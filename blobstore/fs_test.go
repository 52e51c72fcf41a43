package blobstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/docket/docket/internal/scratch"
)

func setup(t testing.TB, opts ...Option) (*FS, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := NewFS(dir, opts...)
	if err != nil {
		t.Fatalf("NewFS: %v", err)
	}
	return s, dir
}

// files lists the regular files under dir, relative to it; directories
// (shards, tmp), the lock files of temporary directories and the segments
// of live journals are expected and ignored.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.HasSuffix(path, scratch.LockSuffix) && filepath.Base(filepath.Dir(path)) != journalDirName {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	return out
}

func assertNoFiles(t *testing.T, dir string) {
	t.Helper()
	if got := files(t, dir); len(got) != 0 {
		t.Fatalf("files left behind: %v", got)
	}
}

func keyOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	ctx := context.Background()
	body := []byte("%PDF-1.7 pretend this is a document")

	blob, err := s.Put(ctx, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if want := (Blob{Key: keyOf(body), Size: int64(len(body))}); blob != want {
		t.Fatalf("Put = %+v, want %+v", blob, want)
	}
	want := filepath.Join(blob.Key[:2], blob.Key)
	if got := files(t, dir); len(got) != 1 || got[0] != want {
		t.Fatalf("files = %v, want [%s]", got, want)
	}

	st, err := s.Stat(ctx, blob.Key)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st != blob {
		t.Fatalf("Stat = %+v, want %+v", st, blob)
	}

	rc, err := s.Open(ctx, blob.Key)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("read %q, want %q", got, body)
	}
}

func TestPutSameContentTwice(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	ctx := context.Background()
	body := []byte("same bytes")

	a, err := s.Put(ctx, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("first Put: %v", err)
	}
	b, err := s.Put(ctx, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("second Put: %v", err)
	}
	if a != b {
		t.Fatalf("blobs differ: %+v vs %+v", a, b)
	}
	if got := files(t, dir); len(got) != 1 {
		t.Fatalf("files = %v, want exactly one", got)
	}
}

// A Put that finds its content already stored answers only once the
// blob's directory entry is durable: the blob may be a concurrent Put's,
// renamed into place but not yet synced, and an acknowledged upload must
// survive a crash.
func TestPutSameContentSyncsTheExistingEntry(t *testing.T) {
	t.Parallel()
	s, _ := setup(t, JournalMax(0))
	var synced []string
	s.syncDir = func(dir string) error {
		synced = append(synced, dir)
		return syncDir(dir)
	}
	ctx := context.Background()
	body := []byte("same bytes, twice")
	blob, err := s.Put(ctx, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("first Put: %v", err)
	}
	shard := filepath.Dir(s.path(blob.Key))
	if len(synced) != 1 || synced[0] != shard {
		t.Fatalf("first Put synced %v, want [%s]", synced, shard)
	}
	if _, err := s.Put(ctx, bytes.NewReader(body)); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	if len(synced) != 2 || synced[1] != shard {
		t.Fatalf("the Put that found its blob synced %v, want its shard %s again", synced[1:], shard)
	}
	// A failed sync fails the Put: it must not be acknowledged.
	s.syncDir = func(string) error { return errors.New("disk gone") }
	if _, err := s.Put(ctx, bytes.NewReader(body)); err == nil {
		t.Fatal("Put succeeded although its blob's directory could not be synced")
	}
}

func TestPutRepairsDamagedBlob(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	ctx := context.Background()
	body := []byte("will be truncated on disk")
	key := keyOf(body)
	if err := os.WriteFile(filepath.Join(dir, key[:2], key), body[:3], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, bytes.NewReader(body)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	st, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st.Size != int64(len(body)) {
		t.Fatalf("size = %d, want %d", st.Size, len(body))
	}
}

func TestPutEmpty(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	_, err := s.Put(context.Background(), strings.NewReader(""))
	if !errors.Is(err, ErrEmpty) {
		t.Fatalf("err = %v, want ErrEmpty", err)
	}
	if !IsClientError(err) {
		t.Fatalf("IsClientError(%v) = false", err)
	}
	assertNoFiles(t, dir)
}

// countingReader serves an endless stream and records how much was taken,
// to prove Put stops reading once the limit is exceeded.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n += int64(len(p))
	return len(p), nil
}

func TestPutSizeLimit(t *testing.T) {
	t.Parallel()
	const limit = 100

	t.Run("exactly at limit", func(t *testing.T) {
		t.Parallel()
		s, dir := setup(t, MaxSize(limit))
		blob, err := s.Put(context.Background(), bytes.NewReader(bytes.Repeat([]byte("a"), limit)))
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if blob.Size != limit {
			t.Fatalf("size = %d, want %d", blob.Size, limit)
		}
		if got := files(t, dir); len(got) != 1 {
			t.Fatalf("files = %v, want one", got)
		}
	})

	t.Run("one over", func(t *testing.T) {
		t.Parallel()
		s, dir := setup(t, MaxSize(limit))
		_, err := s.Put(context.Background(), bytes.NewReader(bytes.Repeat([]byte("a"), limit+1)))
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if !IsClientError(err) {
			t.Fatalf("IsClientError(%v) = false", err)
		}
		assertNoFiles(t, dir)
	})

	t.Run("stops reading", func(t *testing.T) {
		t.Parallel()
		s, dir := setup(t, MaxSize(limit))
		r := &countingReader{}
		_, err := s.Put(context.Background(), r)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if r.n > limit+1 {
			t.Fatalf("read %d bytes, want at most %d", r.n, limit+1)
		}
		assertNoFiles(t, dir)
	})
}

var errBoom = errors.New("boom")

// failingReader yields some bytes, then fails, like a dropped connection.
type failingReader struct {
	data []byte
	done bool
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.done {
		return 0, errBoom
	}
	f.done = true
	return copy(p, f.data), nil
}

func TestPutReadErrorLeavesNothing(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	_, err := s.Put(context.Background(), &failingReader{data: []byte("partial upload")})
	if !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want errBoom", err)
	}
	if IsClientError(err) {
		t.Fatalf("IsClientError(%v) = true for a read failure", err)
	}
	assertNoFiles(t, dir)
}

// cancelingReader cancels its context after the first read, simulating a
// client going away mid-upload.
type cancelingReader struct {
	cancel context.CancelFunc
	reads  int
}

func (c *cancelingReader) Read(p []byte) (int, error) {
	c.reads++
	if c.reads > 1 {
		return 0, errors.New("read after cancel")
	}
	c.cancel()
	return copy(p, "some bytes"), nil
}

func TestPutContextCanceled(t *testing.T) {
	t.Parallel()

	t.Run("before", func(t *testing.T) {
		t.Parallel()
		s, dir := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.Put(ctx, strings.NewReader("data"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		assertNoFiles(t, dir)
	})

	t.Run("midway", func(t *testing.T) {
		t.Parallel()
		s, dir := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := &cancelingReader{cancel: cancel}
		_, err := s.Put(ctx, r)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if r.reads != 1 {
			t.Fatalf("reads = %d, want 1", r.reads)
		}
		assertNoFiles(t, dir)
	})
}

func TestInvalidKeys(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	valid := keyOf([]byte("x"))
	keys := []string{
		"",
		"../etc/passwd",
		"../../../../../../../../../../../../../../../../../../etc/passwd",
		"tmp",
		strings.ToUpper(valid),
		valid[:63],
		valid + "0",
		"../" + valid[3:],
		valid[:2] + "/" + valid[3:],
		valid[:63] + "\x00",
		strings.Repeat("g", 64),
	}
	for _, key := range keys {
		if _, err := s.Stat(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Stat(%q) err = %v, want ErrInvalidKey", key, err)
		} else if !IsClientError(err) {
			t.Errorf("IsClientError(%v) = false", err)
		}
		rc, err := s.Open(ctx, key)
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Open(%q) err = %v, want ErrInvalidKey", key, err)
		}
		if rc != nil {
			rc.Close()
			t.Errorf("Open(%q) returned a reader", key)
		}
	}
}

func TestUnknownKey(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	key := keyOf([]byte("never stored"))

	_, err := s.Stat(ctx, key)
	if !errors.Is(err, ErrNotFound) || !IsNotFound(err) {
		t.Fatalf("Stat err = %v, want ErrNotFound", err)
	}
	if IsClientError(err) {
		t.Fatalf("IsClientError(%v) = true", err)
	}
	rc, err := s.Open(ctx, key)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open err = %v, want ErrNotFound", err)
	}
	if rc != nil {
		t.Fatal("Open returned a reader for an unknown key")
	}
}

func TestNewFSRemovesLeftoverTempFiles(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	ctx := context.Background()
	kept, err := s.Put(ctx, strings.NewReader("survives restart"))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}

	// Simulate a crash mid-Put: a half-written temp file in the directory
	// of a store whose lock nobody holds, one in an earlier version's
	// layout (tmp/07), plus a stray subdirectory for good measure.
	tmp := filepath.Join(dir, "tmp")
	crashed := filepath.Join(tmp, "p-0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(crashed, "07"), 0o750); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(crashed, "07", "put-1"), crashed + scratch.LockSuffix, filepath.Join(tmp, "07", "put-123456")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("half a blo"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "stray"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "stray", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	s2, err := NewFS(dir)
	if err != nil {
		t.Fatalf("NewFS: %v", err)
	}
	if left := files(t, tmp); len(left) != 0 {
		t.Fatalf("tmp not cleaned: %v", left)
	}
	for _, gone := range []string{filepath.Join(tmp, "stray"), crashed, crashed + scratch.LockSuffix, filepath.Join(tmp, "07")} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived NewFS: %v", gone, err)
		}
	}
	if _, err := os.Stat(s.tmp + scratch.LockSuffix); err != nil {
		t.Fatalf("the first store, still open, lost its lock file: %v", err)
	}
	if _, err := s2.Stat(ctx, kept.Key); err != nil {
		t.Fatalf("stored blob lost on restart: %v", err)
	}
}

// TestPutRecreatesTempDirs removes the temporary directories under a
// running store, as a cleaner of temp files might: Put makes them again.
func TestPutRecreatesTempDirs(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	if err := os.RemoveAll(filepath.Join(dir, "tmp")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		body := fmt.Sprintf("blob %d after tmp went away", i)
		b, err := s.Put(ctx, strings.NewReader(body))
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
		if b.Key != keyOf([]byte(body)) {
			t.Fatalf("Put %d stored %s", i, b.Key)
		}
	}
}

func TestNewFSRejectsBadMaxSize(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, -1} {
		if _, err := NewFS(t.TempDir(), MaxSize(n)); err == nil {
			t.Errorf("NewFS(MaxSize(%d)) succeeded", n)
		}
	}
}

func TestConcurrentPutSameContent(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	ctx := context.Background()
	body := bytes.Repeat([]byte("concurrent "), 10_000)
	want := Blob{Key: keyOf(body), Size: int64(len(body))}

	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			blob, err := s.Put(ctx, bytes.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			if blob != want {
				errs <- fmt.Errorf("blob = %+v, want %+v", blob, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := files(t, dir); len(got) != 1 {
		t.Fatalf("files = %v, want exactly one", got)
	}
	rc, err := s.Open(ctx, want.Key)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("content mismatch (err %v)", err)
	}
}

// BenchmarkPutParallel puts small blobs from 32 goroutines, as concurrent
// uploads do: what the temporary files' directories cost under contention,
// with the journal's shared fdatasync and with an fsync of each blob's file
// and directory.
func BenchmarkPutParallel(b *testing.B) {
	for _, c := range []struct {
		name string
		max  int64
	}{{"journal", DefaultJournalMax}, {"fsync", 0}} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := setup(b, JournalMax(c.max))
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				body := make([]byte, 1<<10)
				for pb.Next() {
					i := n.Add(1)
					binary.LittleEndian.PutUint64(body, uint64(i))
					if _, err := s.Put(ctx, bytes.NewReader(body)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			if st := s.JournalStats(); st.Syncs > 0 {
				b.ReportMetric(float64(st.Records)/float64(st.Syncs), "records/sync")
			}
		})
	}
}

func BenchmarkPut(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s, _ := setup(b)
			ctx := context.Background()
			body := make([]byte, size)
			b.SetBytes(int64(size))
			for i := 0; b.Loop(); i++ {
				// Vary the content so every iteration writes a new
				// blob instead of hitting the duplicate fast path.
				body[0], body[1], body[2], body[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
				if _, err := s.Put(ctx, bytes.NewReader(body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stallingReader returns head, tells started, and returns tail only once
// release is closed: a Put that is mid-body for as long as the test wants.
type stallingReader struct {
	head, tail []byte
	started    chan struct{}
	release    chan struct{}
	step       int
}

func (r *stallingReader) Read(p []byte) (int, error) {
	r.step++
	switch r.step {
	case 1:
		close(r.started)
		return copy(p, r.head), nil
	case 2:
		<-r.release
		return copy(p, r.tail), nil
	}
	return 0, io.EOF
}

// TestNewFSKeepsAnotherStoresPutInFlight: nodes on one machine share a
// blob directory (README, "Documents"), so a node that starts while
// another is storing an upload must leave that upload's temporary file
// alone.
func TestNewFSKeepsAnotherStoresPutInFlight(t *testing.T) {
	t.Parallel()
	s, dir := setup(t)
	r := &stallingReader{head: []byte("first half, "), tail: []byte("second half"), started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	var got Blob
	go func() {
		var err error
		got, err = s.Put(context.Background(), r)
		done <- err
	}()
	<-r.started
	other, err := NewFS(dir)
	if err != nil {
		t.Fatalf("second NewFS: %v", err)
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Fatalf("the first store's Put, after a second store opened the directory: %v", err)
	}
	want := "first half, second half"
	if got.Key != keyOf([]byte(want)) {
		t.Fatalf("stored %s, want the key of %q", got.Key, want)
	}
	rc, err := other.Open(context.Background(), got.Key)
	if err != nil {
		t.Fatalf("the second store does not see the blob: %v", err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != want {
		t.Fatalf("read %q, want %q", b, want)
	}
}

// TestNewFSWhileOthersPut: stores that open and sweep the directory while
// others store uploads, as nodes starting on a shared --blob-dir do, never
// fail a Put.
func TestNewFSWhileOthersPut(t *testing.T) {
	t.Parallel()
	_, dir := setup(t)
	ctx := context.Background()
	stop := make(chan struct{})
	var puts atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		s, err := NewFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf("writer %d upload %d %s", w, i, strings.Repeat("x", 16<<10))
				b, err := s.Put(ctx, strings.NewReader(body))
				if err != nil {
					t.Errorf("writer %d, Put %d, while other stores opened: %v", w, i, err)
					return
				}
				if b.Key != keyOf([]byte(body)) {
					t.Errorf("writer %d stored %s", w, b.Key)
					return
				}
				puts.Add(1)
			}
		})
	}
	for range 20 {
		if _, err := NewFS(dir); err != nil {
			t.Errorf("NewFS while others Put: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	if puts.Load() == 0 {
		t.Fatal("no Put ran while the stores opened")
	}
	t.Logf("%d Puts while 20 stores opened", puts.Load())
}
