package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// The lifecycle's latency floor. A document's way from upload to webhook
// holds, in a row, at least lifecycleTrips produce -> consume trips through
// Kafka (DocumentUploaded and DocumentQueued applied before their calls
// answer, the work record reaching a worker, the result applied before
// the webhook goes out: DESIGN.md, invariants 5 and 6, and the work topic)
// and one fdatasync (an upload answers once its bytes are durable). No
// design with those steps is faster than their sum. The floor draws each
// from what this run measured alone on the same broker and disk — the raw
// trip's latencies, and an fdatasync's at the upload rate of half of peak —
// independently, and reports the quantiles of the sums. Everything else a
// lifecycle does (HTTP, the fold, extraction, the claim's own append, the
// webhook's POST) is left out, so the floor errs low.
const (
	lifecycleTrips = 4
	floorDraws     = 200_000
	syncProbeBytes = 4 << 10 // an upload's record in the blob journal, about
	syncProbeSpan  = 8 << 20 // the probe's file, written once ahead, reused
)

// latencyFloor is the lifecycle's floor and what it was drawn from.
type latencyFloor struct {
	KafkaTrips int     `json:"kafka_trips"`
	Fdatasync  latency `json:"fdatasync"`
	Floor      latency `json:"floor"`
	Draws      int     `json:"draws"`
}

func (lf latencyFloor) print(w io.Writer) {
	printLatency(w, lf.Fdatasync)
	printLatency(w, lf.Floor)
}

// newLatencyFloor combines the raw trip's latencies and the fdatasync's.
func newLatencyFloor(trip, sync *hist) *latencyFloor {
	parts := make([]*hist, 0, lifecycleTrips+1)
	for range lifecycleTrips {
		parts = append(parts, trip)
	}
	parts = append(parts, sync)
	name := fmt.Sprintf("lifecycle floor: %d raw trips + 1 fdatasync", lifecycleTrips)
	return &latencyFloor{KafkaTrips: lifecycleTrips, Fdatasync: sync.summary("fdatasync of 4 KiB at the upload rate of half of peak"),
		Floor: sumOfDraws(name, parts, floorDraws, 1), Draws: floorDraws}
}

// probeSync writes syncProbeBytes and fdatasyncs them at perSec, for d, in a
// file under dir written and synced whole beforehand (as the blob journal
// zeroes its segments ahead, so that a sync writes data and no metadata).
func probeSync(dir string, perSec float64, d time.Duration) (*hist, error) {
	f, err := os.CreateTemp(dir, "docket-bench-sync-")
	if err != nil {
		return nil, fmt.Errorf("sync probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, syncProbeSpan)); err != nil {
		return nil, fmt.Errorf("sync probe: %w", err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("sync probe: %w", err)
	}
	rec := make([]byte, syncProbeBytes)
	_, _ = rand.Read(rec)
	h := &hist{}
	n := max(int(perSec*d.Seconds()), 1)
	every := time.Duration(float64(time.Second) / perSec)
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
			time.Sleep(wait)
		}
		off := int64(i*syncProbeBytes) % syncProbeSpan
		t := time.Now()
		if _, err := f.WriteAt(rec, off); err != nil {
			return nil, fmt.Errorf("sync probe: %w", err)
		}
		if err := dataSync(f); err != nil {
			return nil, fmt.Errorf("sync probe: %s: %w", filepath.Base(f.Name()), err)
		}
		h.add(time.Since(t))
	}
	return h, nil
}

// sumOfDraws is the distribution of the sum of one independent draw from
// each of parts, estimated from draws sums with a fixed seed (the same
// histograms give the same figures). A draw is its bucket's lower bound,
// so the sums err low.
func sumOfDraws(name string, parts []*hist, draws int, seed uint64) latency {
	samplers := make([]func(*mrand.Rand) float64, len(parts))
	for i, p := range parts {
		samplers[i] = p.sampler()
	}
	r := mrand.New(mrand.NewPCG(seed, seed+1))
	sums := make([]float64, draws) // µs
	for i := range sums {
		for _, s := range samplers {
			sums[i] += s(r)
		}
	}
	slices.Sort(sums)
	q := func(p float64) float64 { return sums[min(int(math.Ceil(p/100*float64(draws)))-1, draws-1)] / 1000 }
	return latency{Name: name, Count: draws, P50: q(50), P90: q(90), P99: q(99), Max: sums[draws-1] / 1000}
}

// sampler returns a function that draws a latency, in µs, with the
// histogram's distribution: a bucket in proportion to its count, and its
// lower bound (bucket i > 0 holds [1.01^(i-1), 1.01^i) µs). An empty
// histogram draws 0.
func (h *hist) sampler() func(*mrand.Rand) float64 {
	h.mu.Lock()
	cum := make([]uint64, histBuckets)
	var total uint64
	for i, c := range h.counts {
		total += c
		cum[i] = total
	}
	h.mu.Unlock()
	return func(r *mrand.Rand) float64 {
		if total == 0 {
			return 0
		}
		u := r.Uint64N(total)
		i := sort.Search(len(cum), func(i int) bool { return cum[i] > u })
		if i == 0 {
			return 0
		}
		return math.Pow(histGrowth, float64(i-1))
	}
}
