package blobstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Each FS keeps its temporary files in a directory of its own under
// <dir>/tmp, next to a lock file it holds for as long as it lives. Nodes
// on one machine share a blob directory, so a store that starts must not
// sweep the temporary files of another that is still writing them: it
// removes only the directories whose lock nobody holds, which a crash or
// an exit left behind.
const lockSuffix = ".lock"

// errLockUnsupported is tryLock's answer where the platform has no flock.
var errLockUnsupported = errors.New("blobstore: file locks not supported")

// claimTempDir creates root/<id> and root/<id>.lock, and locks the latter.
// The lock file comes first, so a sweeper never sees the directory without
// it; a sweeper that took the lock in the moment between its creation and
// our locking has removed it, and we start over under another id.
func claimTempDir(root string) (dir string, lock *os.File, err error) {
	return claimTempDirRacing(root, nil)
}

// claimTempDirRacing is claimTempDir with a call of raced(lock path)
// between the lock file's creation and its locking (tests: a sweeper
// arriving in that moment).
func claimTempDirRacing(root string, raced func(string)) (dir string, lock *os.File, err error) {
	for range 8 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", nil, fmt.Errorf("blobstore: temp dir id: %w", err)
		}
		id := "p-" + hex.EncodeToString(b[:])
		path := filepath.Join(root, id+lockSuffix)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", nil, fmt.Errorf("blobstore: create temp lock: %w", err)
		}
		if raced != nil {
			raced(path)
		}
		ok, err := tryLock(f)
		if err != nil && !errors.Is(err, errLockUnsupported) {
			f.Close()
			return "", nil, fmt.Errorf("blobstore: lock %s: %w", path, err)
		}
		if ok || err != nil {
			if same, serr := samePath(f, path); serr == nil && same {
				return filepath.Join(root, id), f, nil
			}
		}
		f.Close()
	}
	return "", nil, errors.New("blobstore: could not claim a temp dir: others kept removing it")
}

// samePath reports whether path still names the file f has open.
func samePath(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// sweepTemp removes what no live store uses under root: the directories
// of stores whose lock is free (then their lock files), and anything
// without a lock file at all (an earlier version's tmp/00…3f, strays).
// own is skipped. recover, when not nil, is called with each directory of
// a dead store, holding its lock, before it is removed: a journal in it
// may hold the only durable copy of acknowledged blobs (journal.go).
func sweepTemp(root, own string, recover func(dir string) error) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("blobstore: read temp dir: %w", err)
	}
	locks := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), lockSuffix); ok && !e.IsDir() {
			locks[name] = true
		}
	}
	for name := range locks {
		if filepath.Join(root, name) == own {
			continue
		}
		if err := sweepIfFree(root, name, recover); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), lockSuffix) || locks[e.Name()] || filepath.Join(root, e.Name()) == own {
			continue
		}
		// A listing may miss a file created while it ran (a store that
		// is starting makes its lock file, then its directory): look
		// again before taking the directory for a stray.
		if _, err := os.Lstat(filepath.Join(root, e.Name()+lockSuffix)); err == nil {
			continue
		}
		// Whatever lost its lock file, a journal's records are never
		// removed unread; where there is none, this costs a listing.
		if recover != nil && e.IsDir() {
			if err := recover(filepath.Join(root, e.Name())); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return fmt.Errorf("blobstore: clean temp dir: %w", err)
		}
	}
	return nil
}

// sweepIfFree removes root/name and then its lock file, holding the lock,
// if no store holds it, after recover (when not nil) returned nil for it.
// Where locks are not supported, it keeps both.
func sweepIfFree(root, name string, recover func(dir string) error) error {
	path := filepath.Join(root, name+lockSuffix)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // another sweeper was first
	}
	if err != nil {
		return fmt.Errorf("blobstore: open temp lock: %w", err)
	}
	defer f.Close()
	ok, err := tryLock(f)
	if errors.Is(err, errLockUnsupported) || (err == nil && !ok) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blobstore: lock %s: %w", path, err)
	}
	if same, err := samePath(f, path); err != nil || !same {
		return nil // swept and gone, or replaced: not ours to judge
	}
	if recover != nil {
		if err := recover(filepath.Join(root, name)); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
		return fmt.Errorf("blobstore: clean temp dir: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blobstore: remove temp lock: %w", err)
	}
	return nil
}
