package main

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssSample is one reading of this process's memory.
type rssSample struct {
	AtSec   float64 `json:"at_s"`
	RSSMiB  float64 `json:"rss_mib"`
	HeapMiB float64 `json:"go_heap_inuse_mib"`
}

// rssReport summarises the samples of a run: the first sample is taken
// one interval in (after warm-up), and drift compares the last with it.
type rssReport struct {
	IntervalSec float64     `json:"interval_s"`
	Samples     []rssSample `json:"samples"`
	FirstMiB    float64     `json:"first_mib"`
	LastMiB     float64     `json:"last_mib"`
	MaxMiB      float64     `json:"max_mib"`
	DriftPct    float64     `json:"drift_percent"`
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
func sampleRSS(ctx context.Context, interval time.Duration) (stop func() rssReport) {
	var mu sync.Mutex
	rep := rssReport{IntervalSec: interval.Seconds()}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
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
			mu.Lock()
			rep.Samples = append(rep.Samples, rssSample{AtSec: time.Since(start).Seconds(), RSSMiB: float64(vmRSS()) / (1 << 20), HeapMiB: float64(ms.HeapInuse) / (1 << 20)})
			mu.Unlock()
		}
	}()
	return func() rssReport {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if n := len(rep.Samples); n > 0 {
			rep.FirstMiB, rep.LastMiB = rep.Samples[0].RSSMiB, rep.Samples[n-1].RSSMiB
			for _, s := range rep.Samples {
				rep.MaxMiB = max(rep.MaxMiB, s.RSSMiB)
			}
			if rep.FirstMiB > 0 {
				rep.DriftPct = 100 * (rep.LastMiB - rep.FirstMiB) / rep.FirstMiB
			}
		}
		return rep
	}
}
