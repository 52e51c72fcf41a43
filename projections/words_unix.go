//go:build unix

package projections

import (
	"syscall"
	"unsafe"
)

// allocWords returns n zeroed words mapped outside the Go heap, or nil if
// the system refuses them. The key filter is the one structure of the
// views that grows with the data they hold; on the Go heap the collector
// (GOGC=100) lets the heap grow to twice what is live, so every stage
// cost about twice its size in resident memory (10-minute bench run,
// BENCHMARKS.md). Mapped memory costs its size, and only the pages
// touched.
func allocWords(n int) []uint64 {
	if n <= 0 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// freeWords unmaps what allocWords returned; w must not be used after.
func freeWords(w []uint64) {
	if len(w) == 0 {
		return
	}
	_ = syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8))
}
