package main

import (
	"os"
	"slices"
	"testing"
	"time"
)

// TestProcCPUReadsAProcess: the broker's CPU is read from /proc in the
// same unit as this process's own (getrusage); burning CPU here moves both.
func TestProcCPUReadsAProcess(t *testing.T) {
	t.Parallel()
	self0, ok := processCPU()
	if !ok {
		t.Fatal("getrusage failed")
	}
	proc0, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for {
		if d, _ := processCPU(); d-self0 >= 200*time.Millisecond {
			break
		}
		for i := range 100_000 {
			x += i
		}
	}
	proc1, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in ticks of 10 ms; other tests run beside this one, so
	// the process may have used more.
	if d := proc1 - proc0; d < 150*time.Millisecond {
		t.Fatalf("200 ms of CPU burnt, /proc saw %v (%d)", d, x)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("a process that cannot exist was read")
	}
}

func TestParsePIDs(t *testing.T) {
	t.Parallel()
	if p, err := parsePIDs(" 12, 34,"); err != nil || !slices.Equal(p, []int{12, 34}) {
		t.Fatalf("%v, %v", p, err)
	}
	if p, err := parsePIDs(""); err != nil || p != nil {
		t.Fatalf("empty: %v, %v", p, err)
	}
	for _, bad := range []string{"x", "0", "-3", "1;2"} {
		if _, err := parsePIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
