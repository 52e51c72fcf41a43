package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestProbeCreateLeavesItsFiles: the probe measures a positive cost per
// file where threads' CPU is read, and leaves every file it made, since
// removing them would free inodes that later creations on ext4 without a
// journal skip one by one.
func TestProbeCreateLeavesItsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fc, ok, err := probeCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ok != (runtime.GOOS == "linux") {
		t.Fatalf("measured: %v on %s", ok, runtime.GOOS)
	}
	if ok && (fc.Files != createProbeFiles || fc.CPUMicros <= 0) {
		t.Fatalf("probe: %+v", fc)
	}
	left, err := os.ReadDir(filepath.Join(dir, "create-probe"))
	if err != nil || len(left) != createProbeFiles {
		t.Fatalf("%d files left, want %d: %v", len(left), createProbeFiles, err)
	}
	// A second probe in the same place fails rather than measure opening
	// files that already exist.
	if _, _, err := probeCreate(dir); err == nil {
		t.Fatal("a second probe over the first one's files succeeded")
	}
}

func TestWarnSlowCreateOnlyAboveItsThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		us   float64
		warn bool
	}{{18.3, false}, {slowCreate, false}, {slowCreate + 1, true}, {519.1, true}} {
		var out bytes.Buffer
		warnSlowCreate(&out, "/blobs", fileCreate{Files: createProbeFiles, CPUMicros: tc.us})
		if got := strings.Contains(out.String(), "warning: creating a file in /blobs"); got != tc.warn {
			t.Errorf("%.1f µs per file: warned %v, want %v: %q", tc.us, got, tc.warn, out.String())
		}
	}
}
