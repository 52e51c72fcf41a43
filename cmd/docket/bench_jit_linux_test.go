package main

import (
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestProcJITReadsCompilerThreads: the time of a thread named as HotSpot
// names its compilers counts, and none of this process's own threads does.
// Not parallel: while it runs, this process has a compiler thread, which
// the bench test, reading this process as its broker, would count.
func TestProcJITReadsCompilerThreads(t *testing.T) {
	before, err := procJIT(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before != 0 {
		t.Fatalf("a Go process has no compiler threads, read %v", before)
	}
	burnt, release := make(chan error), make(chan struct{})
	go func() {
		// Never unlocked: the thread ends with the goroutine, and its
		// name with it.
		runtime.LockOSThread()
		name, _ := unix.BytePtrFromString("C2 CompilerThread0")
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0); err != nil {
			burnt <- err
			return
		}
		x := 0
		for {
			var ru unix.Rusage
			if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
				burnt <- err
				return
			}
			if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= 200*time.Millisecond {
				break
			}
			for i := range 100_000 {
				x += i
			}
		}
		burnt <- nil
		<-release
		_ = x
	}()
	if err := <-burnt; err != nil {
		t.Fatal(err)
	}
	after, err := procJIT(os.Getpid())
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in ticks of 10 ms.
	if d := after - before; d < 180*time.Millisecond || d > time.Second {
		t.Fatalf("the compiler thread burnt 200 ms, /proc/PID/task saw %v", d)
	}
}
