//go:build !linux

package blobstore

import (
	"errors"
	"os"
	"path/filepath"
)

// needPaths is true: without syncfs(2), a checkpoint fsyncs each file the
// lap renamed, and its directory.
const needPaths = true

func fdatasync(f *os.File) error { return f.Sync() }

func checkpointFiles(_ *os.File, paths []string) error {
	dirs := map[string]bool{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// linked reports whether f still has its name: whether its path still
// names the same file.
func linked(f *os.File) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(f.Name())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}
