//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the user and system time this process has used.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// syncDisks writes every dirty page back (sync(2)), so that the next
// measurement does not pay for the last one's write-back.
func syncDisks() { syscall.Sync() }
