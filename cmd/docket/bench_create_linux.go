package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU runs fn on one locked OS thread and returns the CPU time
// (user and system) that thread used meanwhile (RUSAGE_THREAD): the
// process's would add whatever its other goroutines did. The sum, since
// the kernel splits a thread's exact runtime into user and system time by
// its clock ticks, a few milliseconds apart.
func threadCPU(fn func() error) (time.Duration, bool, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &before) != nil {
		return 0, false, fn()
	}
	if err := fn(); err != nil {
		return 0, false, err
	}
	if unix.Getrusage(unix.RUSAGE_THREAD, &after) != nil {
		return 0, false, nil
	}
	return time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()), true, nil
}
