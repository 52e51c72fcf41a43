//go:build !unix

package main

import "time"

// processCPU is not read here: the bench reports no CPU figures.
func processCPU() (time.Duration, bool) { return 0, false }

// syncDisks does nothing here: there is no sync(2) to call.
func syncDisks() {}
