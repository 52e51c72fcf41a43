//go:build linux

package blobstore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// needPaths is false: a checkpoint syncs the whole filesystem at once.
const needPaths = false

// fdatasync writes f's data, and its size when that changed, but not its
// timestamps: on a segment zeroed ahead, no metadata at all (no commit of
// a filesystem's journal).
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// checkpointFiles makes every file renamed during a lap durable with one
// syncfs(2) of the filesystem f is on (the store's: blobs are renamed from
// its temporary directory, and rename does not cross filesystems). One
// flush instead of two per blob; it writes others' dirty pages too, which
// the kernel would write back within half a minute anyway.
func checkpointFiles(f *os.File, _ []string) error {
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("blobstore: syncfs: %w", err)
	}
	return nil
}

// linked reports whether f still has a name: an unlinked file's data goes
// with it in a crash.
func linked(f *os.File) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, fmt.Errorf("blobstore: stat journal: %w", err)
	}
	return st.Nlink > 0, nil
}
