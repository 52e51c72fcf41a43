package blobstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/docket/docket/internal/scratch"
)

// Store is implemented by the filesystem store now and an S3 store later.
type Store interface {
	// Put streams r into the store, enforcing the size limit, and returns
	// the content address (hex SHA-256) and size.
	Put(ctx context.Context, r io.Reader) (Blob, error)
	// Open returns the bytes of the blob stored under key. The caller
	// must close it.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat returns the blob stored under key without reading it.
	Stat(ctx context.Context, key string) (Blob, error)
}

// Blob identifies stored content.
type Blob struct {
	Key  string // lowercase hex SHA-256 of the content
	Size int64  // length in bytes
}

// FS is a Store on a local filesystem. Blobs live at <dir>/<key[0:2]>/<key>;
// the two-character fan-out keeps directories small enough to list.
//
// An FS is safe for concurrent use, and several stores, in one process or
// in several on one machine, may share a directory: each keeps its
// temporary files in <dir>/tmp/<id>, locked for as long as it lives, and
// NewFS sweeps only what no live store holds (internal/scratch).
type FS struct {
	dir     string
	tmp     string       // this store's own temporary directory
	scratch *scratch.Dir // tmp, held while the store lives: nobody sweeps it
	maxSize int64
	next    atomic.Uint32 // the temporary directory of the next Put
	// journal makes blobs of at most journalMax bytes durable with a
	// shared fdatasync (journal.go); nil when JournalMax is 0.
	journal    *journal
	journalMax int64
	// syncDir makes a directory's entries durable (tests count its calls).
	syncDir func(dir string) error
	// live is held for reading by every Put and for writing by Close,
	// which waits for the Puts in flight.
	live   sync.RWMutex
	closed bool
}

// ErrClosed is what Put returns after Close.
var ErrClosed = errors.New("blobstore: store closed")

var _ Store = (*FS)(nil)

const (
	tmpDirName = "tmp"
	keyLen     = sha256.Size * 2
	copyBuf    = 32 << 10
	// tmpDirs is how many directories under tmp/ the temporary files of
	// concurrent Puts spread over. Creating a file takes its directory's
	// lock, and with every Put in one directory, concurrent uploads spun
	// in the kernel waiting for it: on a 2-core VM, 32 concurrent Puts
	// spent a fifth of their CPU in rwsem_spin_on_owner, and creating the
	// temporary file was 14 % of a node's CPU at half of its peak
	// (BENCHMARKS.md, item 23).
	tmpDirs = 64
)

// NewFS opens (creating if needed) a store rooted at dir. Temporary files
// left under <dir>/tmp by a store that crashed or exited are removed: none
// of them was ever visible under a key, so they are garbage. Those of a
// store that still runs are not.
func NewFS(dir string, opts ...Option) (*FS, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxSize <= 0 {
		return nil, fmt.Errorf("blobstore: max size must be positive, got %d", cfg.maxSize)
	}
	if dir == "" {
		return nil, errors.New("blobstore: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blobstore: resolve %s: %w", dir, err)
	}
	if cfg.journalWatch < 0 {
		return nil, fmt.Errorf("blobstore: journal watch interval must not be negative, got %v", cfg.journalWatch)
	}
	if cfg.journalMax > 0 && cfg.journalSegment < segHeader+recHeader+cfg.journalMax {
		return nil, fmt.Errorf("blobstore: journal segment of %d bytes cannot hold a %d-byte blob", cfg.journalSegment, cfg.journalMax)
	}
	root := filepath.Join(abs, tmpDirName)
	own, err := scratch.Claim(root)
	if err != nil {
		return nil, fmt.Errorf("blobstore: temp dir: %w", err)
	}
	s := &FS{dir: abs, tmp: own.Path(), scratch: own, maxSize: cfg.maxSize, journalMax: cfg.journalMax, syncDir: syncDir}
	if err := s.prepare(root, cfg); err != nil {
		own.Abandon()
		return nil, err
	}
	return s, nil
}

// prepare makes the store's directories, and recovers and removes what
// dead stores left under root.
func (s *FS) prepare(root string, cfg config) error {
	for i := range tmpDirs {
		if err := os.MkdirAll(filepath.Join(s.tmp, fmt.Sprintf("%02x", i)), 0o750); err != nil {
			return fmt.Errorf("blobstore: create temp dir: %w", err)
		}
	}
	// All 256 shard directories are created and made durable up front, so
	// Put never has to wonder whether another goroutine's new shard entry
	// has reached the disk yet.
	for i := range 256 {
		shard := filepath.Join(s.dir, fmt.Sprintf("%02x", i))
		if err := os.Mkdir(shard, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("blobstore: create shard dir: %w", err)
		}
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	if err := scratch.Sweep(root, s.tmp, func(dead string) error {
		_, err := s.recoverJournal(dead)
		return err
	}); err != nil {
		return fmt.Errorf("blobstore: %w", err)
	}
	if cfg.journalMax > 0 {
		j, err := newJournal(filepath.Join(s.tmp, journalDirName), cfg.journalSegment, cfg.journalWatch, cfg.log)
		if err != nil {
			return err
		}
		s.journal = j
	}
	return nil
}

// Put implements Store. Cancelling ctx is noticed between reads; a Read that
// blocks forever must be unblocked by its owner (e.g. a request deadline).
func (s *FS) Put(ctx context.Context, r io.Reader) (blob Blob, err error) {
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("blobstore: put: %w", err)
	}
	s.live.RLock()
	defer s.live.RUnlock()
	if s.closed {
		return Blob{}, ErrClosed
	}
	tmpDir := filepath.Join(s.tmp, fmt.Sprintf("%02x", s.next.Add(1)%tmpDirs))
	f, err := os.CreateTemp(tmpDir, "put-*")
	if errors.Is(err, os.ErrNotExist) {
		// Someone removed the temporary directories under a running
		// store (a cleaner of temp files, an operator): make it again.
		if err = os.MkdirAll(tmpDir, 0o750); err == nil {
			f, err = os.CreateTemp(tmpDir, "put-*")
		}
	}
	if err != nil {
		return Blob{}, fmt.Errorf("blobstore: create temp file: %w", err)
	}
	tmpName := f.Name()
	closed := false
	defer func() {
		// Whatever happened, the temp file must not outlive Put: on
		// success it was renamed away or was a duplicate.
		if !closed {
			f.Close()
		}
		if rmErr := os.Remove(tmpName); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) && err == nil {
			err = fmt.Errorf("blobstore: remove temp file: %w", rmErr)
			blob = Blob{}
		}
	}()

	var small *capture
	w := io.Writer(f)
	if s.journal != nil {
		small = getCapture(s.journalMax)
		defer putCapture(small)
		w = io.MultiWriter(f, small)
	}
	size, sum, err := s.copy(ctx, w, r)
	if err != nil {
		return Blob{}, err
	}
	key := hex.EncodeToString(sum)
	blob = Blob{Key: key, Size: size}
	final := s.path(key)

	// A small blob is durable once its journal record is; its file needs
	// no sync of its own, nor does its directory (journal.go). If the
	// journal has failed, the Put syncs as if there were none.
	var done func(string)
	if small != nil && !small.over {
		done, err = s.journal.append(sum, small.b)
		if err != nil && !errors.Is(err, errJournalFailed) {
			return Blob{}, err
		}
	}
	if done == nil {
		if err := f.Sync(); err != nil {
			return Blob{}, fmt.Errorf("blobstore: sync temp file: %w", err)
		}
	}
	renamed := ""
	defer func() {
		if done != nil {
			done(renamed)
		}
	}()
	closed = true
	if err := f.Close(); err != nil {
		return Blob{}, fmt.Errorf("blobstore: close temp file: %w", err)
	}

	shard := filepath.Dir(final)
	// Same key means same content, so an existing blob of the right size is
	// this one. A size mismatch can only be damage; overwrite it. The
	// existing blob may be a concurrent Put's, renamed into place but not
	// yet made durable by its directory sync: sync it here too, or this
	// Put could be acknowledged and its blob lost in a crash. (The content
	// itself was synced before that rename.) A journaled Put needs no
	// sync: its own record holds the bytes.
	if fi, err := os.Lstat(final); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		if done == nil {
			if err := s.syncDir(shard); err != nil {
				return Blob{}, err
			}
		}
		return blob, nil
	}
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("blobstore: put: %w", err)
	}

	// Concurrent Puts of the same content may both get here; rename
	// atomically replaces identical bytes, so the loser is harmless.
	if err := os.Rename(tmpName, final); err != nil {
		return Blob{}, fmt.Errorf("blobstore: rename into place: %w", err)
	}
	if done != nil {
		renamed = final
		return blob, nil
	}
	if err := s.syncDir(shard); err != nil {
		return Blob{}, err
	}
	return blob, nil
}

// Close waits for the Puts in flight, makes every blob that only the
// journal held durable on its own (one syncfs on Linux), and removes the
// store's temporary directory and lock, so that the next store on the
// directory has nothing to recover: without Close, it reads and hashes the
// journal's blobs again (up to two segments). If the journal had failed,
// its directory is left for that recovery. Later Puts return ErrClosed;
// Open and Stat keep working. Close is idempotent.
func (s *FS) Close() error {
	s.live.Lock()
	defer s.live.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.journal != nil {
		err = s.journal.close()
	}
	if err != nil {
		s.scratch.Abandon()
		return err
	}
	if err := s.scratch.Remove(); err != nil {
		return fmt.Errorf("blobstore: %w", err)
	}
	return nil
}

// copy streams r into w while hashing; see copyHashed.
func (s *FS) copy(ctx context.Context, w io.Writer, r io.Reader) (int64, []byte, error) {
	return copyHashed(ctx, w, r, s.maxSize)
}

// Open implements Store.
func (s *FS) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := validKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blobstore: open: %w", err)
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, fmt.Errorf("blobstore: open %s: %w", key, err)
	}
	return f, nil
}

// Stat implements Store.
func (s *FS) Stat(ctx context.Context, key string) (Blob, error) {
	if err := validKey(key); err != nil {
		return Blob{}, err
	}
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("blobstore: stat: %w", err)
	}
	fi, err := os.Stat(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return Blob{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return Blob{}, fmt.Errorf("blobstore: stat %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return Blob{}, fmt.Errorf("blobstore: stat %s: not a regular file", key)
	}
	return Blob{Key: key, Size: fi.Size()}, nil
}

// path must only be called with a validated key.
func (s *FS) path(key string) string {
	return filepath.Join(s.dir, key[:2], key)
}

// validKey accepts exactly what Put produces, which leaves no room for
// separators, dots or anything else a path could be built from.
func validKey(key string) error {
	if len(key) != keyLen {
		return fmt.Errorf("%w: want %d hex characters, got %d", ErrInvalidKey, keyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: character %d is not lowercase hex", ErrInvalidKey, i)
		}
	}
	return nil
}

// syncDir makes directory entry changes (a rename, a new subdirectory)
// durable; fsyncing the file alone does not.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("blobstore: open dir for sync: %w", err)
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("blobstore: sync dir: %w", err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("blobstore: close dir: %w", err)
	}
	return nil
}
