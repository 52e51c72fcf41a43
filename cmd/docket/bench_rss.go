package main

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/projections"
)

// rssSample is one reading of this process's memory.
type rssSample struct {
	AtSec   float64 `json:"at_s"`
	RSSMiB  float64 `json:"rss_mib"`
	HeapMiB float64 `json:"go_heap_inuse_mib"`
	// GoMiB is what the Go runtime holds from the system (Sys minus
	// HeapReleased); RSS above it is memory allocated outside Go (with
	// cgo, Pebble's block cache and memtables come from C malloc).
	GoMiB float64 `json:"go_held_mib"`
	// The views' bounded structures (projections.Views.Memory), which
	// fill as the views grow: a resident size that rises with them and
	// stops where they stop is a cache filling, not a leak.
	BlockCacheMiB float64 `json:"block_cache_mib"`
	MemTablesMiB  float64 `json:"memtables_mib"`
	KeyFilterMiB  float64 `json:"key_filter_mib"`
}

// rssReport summarises the samples of a run. The raw first and last
// samples include the warm-up (caches, memtables and connection pools
// filling), so the drift compares windows: the median of the second tenth
// of the run (the baseline, after warm-up) with the median of its last
// tenth; short runs with too few samples fall back to first and last.
type rssReport struct {
	IntervalSec float64     `json:"interval_s"`
	Samples     []rssSample `json:"samples"`
	FirstMiB    float64     `json:"first_mib"`
	LastMiB     float64     `json:"last_mib"`
	MaxMiB      float64     `json:"max_mib"`
	BaseMiB     float64     `json:"baseline_mib"`
	EndMiB      float64     `json:"end_mib"`
	DriftPct    float64     `json:"drift_percent"`
}

func (r *rssReport) summarise() {
	n := len(r.Samples)
	if n == 0 {
		return
	}
	r.FirstMiB, r.LastMiB = r.Samples[0].RSSMiB, r.Samples[n-1].RSSMiB
	for _, s := range r.Samples {
		r.MaxMiB = max(r.MaxMiB, s.RSSMiB)
	}
	span := r.Samples[n-1].AtSec
	window := func(from, to float64) float64 {
		var v []float64
		for _, s := range r.Samples {
			if s.AtSec > from && s.AtSec <= to {
				v = append(v, s.RSSMiB)
			}
		}
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	r.BaseMiB, r.EndMiB = window(span/10, 2*span/10), window(9*span/10, span)
	if r.BaseMiB == 0 || r.EndMiB == 0 {
		r.BaseMiB, r.EndMiB = r.FirstMiB, r.LastMiB
	}
	if r.BaseMiB > 0 {
		r.DriftPct = 100 * (r.EndMiB - r.BaseMiB) / r.BaseMiB
	}
}

// vmRSS reads VmRSS from /proc/self/status, in bytes (0 where unavailable).
func vmRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// sampleRSS samples every interval until stop is called, which returns
// the report. The process holds the node and the load generator's client,
// whose own state is bounded (histograms, documents in flight only).
// With heap set, it writes heap profiles to heap+"-base.pprof" once the
// baseline window (the run's second tenth, of span) has passed, and to
// heap+"-end.pprof" when stopped, so that `go tool pprof -base` shows
// what grew between the two windows the drift compares.
func sampleRSS(ctx context.Context, interval time.Duration, views func() projections.MemoryUse, heap string, span time.Duration) (stop func() (rssReport, error)) {
	var mu sync.Mutex
	rep := rssReport{IntervalSec: interval.Seconds()}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var heapErr error
	go func() {
		defer close(done)
		baseWritten := heap == ""
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			vm := views()
			mib := func(n int64) float64 { return float64(n) / (1 << 20) }
			mu.Lock()
			rep.Samples = append(rep.Samples, rssSample{AtSec: time.Since(start).Seconds(), RSSMiB: mib(vmRSS()), HeapMiB: mib(int64(ms.HeapInuse)),
				GoMiB: mib(int64(ms.Sys - ms.HeapReleased)), BlockCacheMiB: mib(vm.BlockCache), MemTablesMiB: mib(vm.MemTables), KeyFilterMiB: mib(vm.KeyFilter)})
			mu.Unlock()
			if !baseWritten && time.Since(start) >= 2*span/10 {
				baseWritten, heapErr = true, writeHeapProfile(heap+"-base.pprof")
			}
		}
	}()
	return func() (rssReport, error) {
		cancel()
		<-done
		if heap != "" && heapErr == nil {
			heapErr = writeHeapProfile(heap + "-end.pprof")
		}
		mu.Lock()
		defer mu.Unlock()
		rep.summarise()
		return rep, heapErr
	}
}
