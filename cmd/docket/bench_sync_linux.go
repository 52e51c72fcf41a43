//go:build linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// dataSync is the blob journal's fdatasync: a file's data, and not its
// timestamps.
func dataSync(f *os.File) error {
	for {
		if err := unix.Fdatasync(int(f.Fd())); err != unix.EINTR {
			return err
		}
	}
}
