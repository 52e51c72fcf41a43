package scratch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LockSuffix ends the name of the lock file beside each directory.
const LockSuffix = ".lock"

// errLockUnsupported is tryLock's answer where the platform has no flock.
var errLockUnsupported = errors.New("scratch: file locks not supported")

// Dir is a directory of temporary files that one live owner holds.
type Dir struct {
	path string
	lock *os.File
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Claim creates root (if needed), root/<id> and root/<id>.lock, and locks
// the latter until Remove or Abandon, or until the process ends. The
// directory's path is absolute, whatever root is: the programs its owner
// runs there (poppler, Tesseract) resolve a relative one from their own
// working directory.
func Claim(root string) (*Dir, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("scratch: create %s: %w", root, err)
	}
	return claimRacing(root, nil)
}

// claimRacing is Claim with a call of raced(lock path) between the lock
// file's creation and its locking (tests: a sweeper arriving in that
// moment). The lock file comes first, so a sweeper never sees the
// directory without it; a sweeper that took the lock in the moment
// between its creation and our locking has removed it, and we start over
// under another id.
func claimRacing(root string, raced func(string)) (*Dir, error) {
	for range 8 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("scratch: id: %w", err)
		}
		id := "p-" + hex.EncodeToString(b[:])
		path := filepath.Join(root, id+LockSuffix)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("scratch: create lock: %w", err)
		}
		if raced != nil {
			raced(path)
		}
		ok, err := tryLock(f)
		if err != nil && !errors.Is(err, errLockUnsupported) {
			f.Close()
			return nil, fmt.Errorf("scratch: lock %s: %w", path, err)
		}
		if ok || err != nil {
			if same, serr := samePath(f, path); serr == nil && same {
				dir := filepath.Join(root, id)
				if err := os.MkdirAll(dir, 0o750); err != nil {
					f.Close()
					os.Remove(path)
					return nil, fmt.Errorf("scratch: create %s: %w", dir, err)
				}
				return &Dir{path: dir, lock: f}, nil
			}
		}
		f.Close()
	}
	return nil, errors.New("scratch: could not claim a directory: others kept removing it")
}

// Remove removes the directory and its lock file, and lets go of the lock.
// The directory goes first: a sweeper that finds a lock file without its
// directory removes it, one that finds a directory without its lock file
// sweeps it (after recovering it, if it recovers).
func (d *Dir) Remove() error {
	err := os.RemoveAll(d.path)
	if err != nil {
		err = fmt.Errorf("scratch: remove %s: %w", d.path, err)
	}
	name := d.lock.Name()
	d.lock.Close()
	if err == nil {
		if rmErr := os.Remove(name); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = fmt.Errorf("scratch: remove lock: %w", rmErr)
		}
	}
	return err
}

// Abandon lets go of the lock and leaves the directory to the next
// sweeper, as a crash would (a blob store whose journal failed needs its
// records recovered).
func (d *Dir) Abandon() { d.lock.Close() }

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

// Sweep removes what no live owner uses under root: the directories whose
// lock is free (then their lock files), and anything without a lock file
// at all (strays, an earlier layout's files). own is skipped. recover,
// when not nil, is called with each dead directory, holding its lock,
// before it is removed: it may hold the only durable copy of something.
// A root that does not exist has nothing to sweep.
func Sweep(root, own string, recover func(dir string) error) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scratch: read %s: %w", root, err)
	}
	locks := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), LockSuffix); ok && !e.IsDir() {
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
		if strings.HasSuffix(e.Name(), LockSuffix) || locks[e.Name()] || filepath.Join(root, e.Name()) == own {
			continue
		}
		// A listing may miss a file created while it ran (an owner that
		// is starting makes its lock file, then its directory): look
		// again before taking the directory for a stray.
		if _, err := os.Lstat(filepath.Join(root, e.Name()+LockSuffix)); err == nil {
			continue
		}
		if recover != nil && e.IsDir() {
			if err := recover(filepath.Join(root, e.Name())); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return fmt.Errorf("scratch: clean %s: %w", root, err)
		}
	}
	return nil
}

// sweepIfFree removes root/name and then its lock file, holding the lock,
// if no owner holds it, after recover (when not nil) returned nil for it.
// Where locks are not supported, it keeps both.
func sweepIfFree(root, name string, recover func(dir string) error) error {
	path := filepath.Join(root, name+LockSuffix)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // another sweeper was first
	}
	if err != nil {
		return fmt.Errorf("scratch: open lock: %w", err)
	}
	defer f.Close()
	ok, err := tryLock(f)
	if errors.Is(err, errLockUnsupported) || (err == nil && !ok) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scratch: lock %s: %w", path, err)
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
		return fmt.Errorf("scratch: clean %s: %w", root, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("scratch: remove lock: %w", err)
	}
	return nil
}
