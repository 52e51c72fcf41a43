package blobstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docket/docket/internal/scratch"
)

// storeUnderTest is a Store plus what the conformance suite needs to see
// behind it: which blobs the backend holds and which temporary files Put
// left behind.
type storeUnderTest struct {
	Store
	// objects lists the blobs the backend holds, in any order.
	objects func(t *testing.T) []string
	// temps lists temporary files left behind by Put.
	temps func(t *testing.T) []string
}

// newStoreFunc returns a fresh, empty store that no other test sees.
type newStoreFunc func(t *testing.T, opts ...Option) storeUnderTest

// assertEmpty fails unless the store holds no blob and no temporary file.
func (s storeUnderTest) assertEmpty(t *testing.T) {
	t.Helper()
	if got := s.objects(t); len(got) != 0 {
		t.Errorf("blobs left behind: %v", got)
	}
	if got := s.temps(t); len(got) != 0 {
		t.Errorf("temporary files left behind: %v", got)
	}
}

// assertOnly fails unless the store holds exactly the blob key and no
// temporary file.
func (s storeUnderTest) assertOnly(t *testing.T, key string) {
	t.Helper()
	got := s.objects(t)
	if len(got) != 1 || !strings.HasSuffix(got[0], key) {
		t.Errorf("blobs = %v, want exactly one, %s", got, key)
	}
	if got := s.temps(t); len(got) != 0 {
		t.Errorf("temporary files left behind: %v", got)
	}
}

func readBlob(t *testing.T, s Store, key string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return got
}

// testStore is the contract every Store implementation must meet. Each
// subtest gets its own store from newStore.
func testStore(t *testing.T, newStore newStoreFunc) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := context.Background()
		body := []byte("%PDF-1.7 pretend this is a document")

		blob, err := s.Put(ctx, bytes.NewReader(body))
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if want := (Blob{Key: keyOf(body), Size: int64(len(body))}); blob != want {
			t.Fatalf("Put = %+v, want %+v", blob, want)
		}
		s.assertOnly(t, blob.Key)
		st, err := s.Stat(ctx, blob.Key)
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if st != blob {
			t.Fatalf("Stat = %+v, want %+v", st, blob)
		}
		if got := readBlob(t, s, blob.Key); !bytes.Equal(got, body) {
			t.Fatalf("read %q, want %q", got, body)
		}
	})

	t.Run("SameContentTwice", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
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
		s.assertOnly(t, a.Key)
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, err := s.Put(context.Background(), strings.NewReader(""))
		if !errors.Is(err, ErrEmpty) || !IsClientError(err) {
			t.Fatalf("err = %v, want ErrEmpty", err)
		}
		s.assertEmpty(t)
	})

	t.Run("SizeLimit", func(t *testing.T) {
		t.Parallel()
		const limit = 100
		t.Run("exactly at limit", func(t *testing.T) {
			t.Parallel()
			s := newStore(t, MaxSize(limit))
			body := bytes.Repeat([]byte("a"), limit)
			blob, err := s.Put(context.Background(), bytes.NewReader(body))
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if blob.Size != limit {
				t.Fatalf("size = %d, want %d", blob.Size, limit)
			}
			s.assertOnly(t, keyOf(body))
		})
		t.Run("one over", func(t *testing.T) {
			t.Parallel()
			s := newStore(t, MaxSize(limit))
			_, err := s.Put(context.Background(), bytes.NewReader(bytes.Repeat([]byte("a"), limit+1)))
			if !errors.Is(err, ErrTooLarge) || !IsClientError(err) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			s.assertEmpty(t)
		})
		t.Run("stops reading", func(t *testing.T) {
			t.Parallel()
			s := newStore(t, MaxSize(limit))
			r := &countingReader{}
			_, err := s.Put(context.Background(), r)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if r.n > limit+1 {
				t.Fatalf("read %d bytes, want at most %d", r.n, limit+1)
			}
			s.assertEmpty(t)
		})
	})

	t.Run("ReadErrorLeavesNothing", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, err := s.Put(context.Background(), &failingReader{data: []byte("partial upload")})
		if !errors.Is(err, errBoom) {
			t.Fatalf("err = %v, want errBoom", err)
		}
		if IsClientError(err) || IsRetryable(err) {
			t.Fatalf("read failure classified as client error or retryable: %v", err)
		}
		s.assertEmpty(t)
	})

	t.Run("ContextCanceled", func(t *testing.T) {
		t.Parallel()
		t.Run("before", func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := s.Put(ctx, strings.NewReader("data")); !errors.Is(err, context.Canceled) {
				t.Fatalf("Put err = %v, want context.Canceled", err)
			}
			key := keyOf([]byte("data"))
			if _, err := s.Stat(ctx, key); !errors.Is(err, context.Canceled) {
				t.Fatalf("Stat err = %v, want context.Canceled", err)
			}
			if _, err := s.Open(ctx, key); !errors.Is(err, context.Canceled) {
				t.Fatalf("Open err = %v, want context.Canceled", err)
			}
			s.assertEmpty(t)
		})
		t.Run("midway", func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &cancelingReader{cancel: cancel}
			_, err := s.Put(ctx, r)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if IsRetryable(err) {
				t.Fatalf("IsRetryable(%v) = true", err)
			}
			if r.reads != 1 {
				t.Fatalf("reads = %d, want 1", r.reads)
			}
			s.assertEmpty(t)
		})
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := context.Background()
		valid := keyOf([]byte("x"))
		for _, key := range []string{
			"",
			"../etc/passwd",
			"tmp",
			strings.ToUpper(valid),
			valid[:63],
			valid + "0",
			"../" + valid[3:],
			valid[:2] + "/" + valid[3:],
			valid[:63] + "\x00",
			valid[:63] + "?",
			strings.Repeat("g", 64),
		} {
			if _, err := s.Stat(ctx, key); !errors.Is(err, ErrInvalidKey) || !IsClientError(err) {
				t.Errorf("Stat(%q) err = %v, want ErrInvalidKey", key, err)
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
	})

	t.Run("UnknownKey", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := context.Background()
		key := keyOf([]byte("never stored"))
		_, err := s.Stat(ctx, key)
		if !IsNotFound(err) || IsClientError(err) || IsRetryable(err) {
			t.Fatalf("Stat err = %v, want only ErrNotFound", err)
		}
		rc, err := s.Open(ctx, key)
		if !IsNotFound(err) {
			t.Fatalf("Open err = %v, want ErrNotFound", err)
		}
		if rc != nil {
			t.Fatal("Open returned a reader for an unknown key")
		}
	})

	t.Run("Large", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		body := make([]byte, 8<<20)
		if _, err := rand.Read(body); err != nil {
			t.Fatal(err)
		}
		want := sha256.Sum256(body)
		blob, err := s.Put(context.Background(), bytes.NewReader(body))
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if blob.Size != int64(len(body)) {
			t.Fatalf("size = %d, want %d", blob.Size, len(body))
		}
		rc, err := s.Open(context.Background(), blob.Key)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer rc.Close()
		h := sha256.New()
		n, err := io.Copy(h, rc)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if n != int64(len(body)) || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("read back %d bytes with a different hash", n)
		}
		s.assertOnly(t, blob.Key)
	})

	t.Run("ConcurrentPutSameContent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := context.Background()
		body := bytes.Repeat([]byte("concurrent "), 10_000)
		want := Blob{Key: keyOf(body), Size: int64(len(body))}
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				blob, err := s.Put(ctx, bytes.NewReader(body))
				if err != nil {
					errs <- err
				} else if blob != want {
					errs <- fmt.Errorf("blob = %+v, want %+v", blob, want)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		s.assertOnly(t, want.Key)
		if got := readBlob(t, s, want.Key); !bytes.Equal(got, body) {
			t.Fatal("content mismatch")
		}
	})
}

// listFiles lists the regular files under dir (relative paths, sorted);
// missing dir means none.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	slices.Sort(out)
	return out
}

func newFSUnderTest(t *testing.T, opts ...Option) storeUnderTest {
	s, dir := setup(t, opts...)
	return storeUnderTest{
		Store: s,
		objects: func(t *testing.T) []string {
			var blobs []string
			for _, f := range listFiles(t, dir) {
				if !strings.HasPrefix(f, tmpDirName+string(filepath.Separator)) {
					blobs = append(blobs, f)
				}
			}
			return blobs
		},
		temps: func(t *testing.T) []string {
			// The store's own lock file and journal live as long as the
			// store.
			own := filepath.Base(s.tmp) + scratch.LockSuffix
			journal := filepath.Join(filepath.Base(s.tmp), journalDirName) + string(filepath.Separator)
			return slices.DeleteFunc(listFiles(t, filepath.Join(dir, tmpDirName)), func(f string) bool {
				return f == own || strings.HasPrefix(f, journal)
			})
		},
	}
}

func TestFSConformance(t *testing.T) {
	t.Parallel()
	testStore(t, newFSUnderTest)
}
