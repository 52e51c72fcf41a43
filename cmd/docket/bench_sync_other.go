//go:build !linux

package main

import "os"

// dataSync is an fsync where there is no fdatasync to measure.
func dataSync(f *os.File) error { return f.Sync() }
