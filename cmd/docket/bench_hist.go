package main

import (
	"math"
	"sync"
	"time"
)

// hist is a log-bucketed latency histogram: constant memory whatever the
// run's length (the 10-minute memory run must not grow the bench's own
// heap), quantiles within 1 % of the true value. Safe for concurrent use.
type hist struct {
	mu     sync.Mutex
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histGrowth  = 1.01 // each bucket is 1 % wider than the last
	histBuckets = 2200 // 1 µs · 1.01^2200 ≈ 3 hours
)

var histLogGrowth = math.Log(histGrowth)

func (h *hist) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := 0
	if us := float64(d) / float64(time.Microsecond); us > 1 {
		i = min(int(math.Log(us)/histLogGrowth)+1, histBuckets-1)
	}
	h.mu.Lock()
	h.counts[i]++
	h.n++
	h.max = max(h.max, d)
	h.mu.Unlock()
}

func (h *hist) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int(h.n)
}

// ms returns the p-th percentile (0-100) in milliseconds: the upper bound
// of the bucket holding it, or the maximum seen for p = 100.
func (h *hist) ms(p float64) float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return 0
	}
	if p >= 100 {
		return float64(h.max) / float64(time.Millisecond)
	}
	rank := uint64(math.Ceil(float64(h.n) * p / 100))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= max(rank, 1) {
			upper := math.Pow(histGrowth, float64(i)) // µs
			return min(upper/1000, float64(h.max)/float64(time.Millisecond))
		}
	}
	return float64(h.max) / float64(time.Millisecond)
}

// latency is one latency distribution as reported.
type latency struct {
	Name  string  `json:"name"`
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func (h *hist) summary(name string) latency {
	return latency{Name: name, Count: h.count(), P50: h.ms(50), P90: h.ms(90), P99: h.ms(99), Max: h.ms(100)}
}
