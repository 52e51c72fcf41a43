package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// fileCreate is what creating one empty file costs the kernel in the
// directory the node's uploads go to, measured before the runs: every
// upload creates one (its temporary file). On ext4 without a journal (this
// VM's root file system), the kernel skips, one by one, every inode of the
// block group freed in the last minute, or six while its inode-table block
// is unwritten (fs/ext4/ialloc.c, recently_deleted), and a run started
// soon after another run or a test removed tens of thousands of files paid
// 400-550 µs of CPU per file instead of 15-25 (BENCHMARKS.md, Reproduce
// and "Creating a file, measured before every run"). A run's figures are
// comparable with another's only when this one is too.
type fileCreate struct {
	// Files is how many files the probe created.
	Files int `json:"files"`
	// CPUMicros is the CPU time per file, in microseconds, of the one
	// thread that created them: almost all of it the kernel's.
	CPUMicros float64 `json:"cpu_us_per_file"`
}

// createProbeFiles is how many files the probe creates: about 10 ms of
// CPU on a healthy disk, a quarter of a second on one that pays for recent
// removals.
const createProbeFiles = 512

// slowCreate is the CPU per file, in microseconds, above which the bench
// warns: four times the most measured on a healthy disk of this VM.
const slowCreate = 100.0

// probeCreate creates createProbeFiles empty files under dir/create-probe
// and measures their CPU. It leaves them: removing them now would
// free as many inodes for the kernel to skip in every creation of the next
// minutes on ext4 without a journal, the cost it measures; they go
// with the bench's directories. ok is false where a thread's CPU cannot be
// read.
func probeCreate(dir string) (fc fileCreate, ok bool, err error) {
	probe := filepath.Join(dir, "create-probe")
	if err := os.MkdirAll(probe, 0o750); err != nil {
		return fileCreate{}, false, fmt.Errorf("create probe: %w", err)
	}
	cpu, ok, err := threadCPU(func() error {
		for i := range createProbeFiles {
			f, err := os.OpenFile(filepath.Join(probe, fmt.Sprintf("f%03d", i)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("create probe: %w", err)
			}
			f.Close()
		}
		return nil
	})
	if err != nil || !ok {
		return fileCreate{}, false, err
	}
	return fileCreate{Files: createProbeFiles, CPUMicros: float64(cpu.Nanoseconds()) / 1e3 / createProbeFiles}, true, nil
}

func (fc fileCreate) String() string {
	return fmt.Sprintf("%.1f µs of CPU per file (%d files)", fc.CPUMicros, fc.Files)
}

// warnSlowCreate says on w when fc is slow enough to distort the runs.
func warnSlowCreate(w io.Writer, dir string, fc fileCreate) {
	if fc.CPUMicros <= slowCreate {
		return
	}
	fmt.Fprintf(w, "bench: warning: creating a file in %s costs %.0f µs of CPU (more than %.0f), and every upload creates one: "+
		"on ext4 without a journal the kernel skips the inodes freed in the last minutes one by one. "+
		"Wait six minutes after removing many files (an earlier run, the tests), or give --blob-dir another directory.\n", dir, fc.CPUMicros, slowCreate)
}
