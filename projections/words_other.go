//go:build !unix

package projections

// allocWords returns n zeroed words; without mmap, on the Go heap.
func allocWords(n int) []uint64 { return make([]uint64, n) }

// freeWords leaves w to the collector.
func freeWords([]uint64) {}
