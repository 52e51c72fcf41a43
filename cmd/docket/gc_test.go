package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestServeTunesTheGC: serve's flags reach the Go runtime. Not parallel:
// the GC settings belong to the whole test process.
func TestServeTunesTheGC(t *testing.T) {
	prevGC, prevLimit := gcPercentNow(), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(prevGC); debug.SetMemoryLimit(prevLimit) })

	tuneGC(250, 3<<30)
	if got := gcPercentNow(); got != 250 {
		t.Errorf("GC percent %d, want 250", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Errorf("memory limit %d, want %d", got, 3<<30)
	}
	tuneGC(0, 0) // the runtime's own: nothing changes
	if got := gcPercentNow(); got != 250 {
		t.Errorf("after 0: GC percent %d, want 250 kept", got)
	}
}

func TestGCFlagsValidate(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	for _, tc := range []struct {
		percent int
		limit   int64
		want    string // "" valid, else a part of the error
	}{
		{400, 0, ""},
		{0, 0, ""},
		{-1, 1 << 30, ""},
		{-1, 0, "needs --memory-limit"},
		{-2, 0, "--gc-percent must be"},
		{100, -1, "--memory-limit must not be negative"},
	} {
		cfg := testConfig(t)
		cfg.GCPercent, cfg.MemoryLimit = tc.percent, tc.limit
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d, %d: %v", tc.percent, tc.limit, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d, %d: %v, want an error with %q", tc.percent, tc.limit, err, tc.want)
		}
	}
}
