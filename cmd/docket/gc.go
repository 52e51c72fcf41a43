package main

import (
	"errors"
	"os"
	"runtime/debug"
)

// DefaultGCPercent is --gc-percent unless GOGC is set in the environment:
// the heap may grow to five times the live heap between collections,
// against Go's default of twice. The fold and the HTTP handlers allocate
// much short-lived memory, and at Go's default the collector's work and
// its assists on allocating goroutines showed in the fold's rate and in
// the latencies. In five alternating pairs of `make bench-kafka` runs, 400
// against 100: projection apply 48 k → 56 k records/s (median; faster in
// all five), GET p99 at 2,000/s 8.1 → 5.9 ms (median; lower in four), for
// about 130 MiB more resident memory (125 → 255 MiB; BENCHMARKS.md).
// --memory-limit bounds that growth where memory is scarce.
const DefaultGCPercent = 400

// gcPercentDefault is DefaultGCPercent, or 0 (keep the runtime's) when the
// operator set GOGC, which the Go runtime has already applied.
func gcPercentDefault() int {
	if os.Getenv("GOGC") != "" {
		return 0
	}
	return DefaultGCPercent
}

// validateGC checks a GC percent and memory limit as --gc-percent and
// --memory-limit take them.
func validateGC(gcPercent int, memoryLimit int64) error {
	var errs []error
	if gcPercent < -1 {
		errs = append(errs, errors.New("--gc-percent must be -1 (off), 0 (the runtime's own) or positive"))
	}
	if memoryLimit < 0 {
		errs = append(errs, errors.New("--memory-limit must not be negative"))
	}
	// With collection off only a memory limit stops the heap's growth.
	if gcPercent == -1 && memoryLimit == 0 && os.Getenv("GOMEMLIMIT") == "" {
		errs = append(errs, errors.New("--gc-percent -1 needs --memory-limit (or GOMEMLIMIT)"))
	}
	return errors.Join(errs...)
}

// tuneGC applies them to the Go runtime; 0 leaves either as it is.
func tuneGC(gcPercent int, memoryLimit int64) {
	if gcPercent != 0 {
		debug.SetGCPercent(gcPercent)
	}
	if memoryLimit > 0 {
		debug.SetMemoryLimit(memoryLimit)
	}
}

// gcPercentNow reads the runtime's GC percent, which Go offers only as the
// previous value of a set.
func gcPercentNow() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}
