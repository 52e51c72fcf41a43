//go:build !unix

package main

import "time"

// processCPU is not read here: the bench reports no CPU figures.
func processCPU() (time.Duration, bool) { return 0, false }
