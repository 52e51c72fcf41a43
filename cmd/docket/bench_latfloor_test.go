package main

import (
	"os"
	"testing"
	"time"
)

// TestSumOfDrawsAddsTheParts: the sum of one draw from each of four
// histograms of a single value and one of another is their sum, within
// the buckets' 1 % and always below it (a draw is its bucket's lower
// bound); and the same seed gives the same figures.
func TestSumOfDrawsAddsTheParts(t *testing.T) {
	t.Parallel()
	trip, sync := &hist{}, &hist{}
	for range 100 {
		trip.add(time.Millisecond)
		sync.add(3 * time.Millisecond)
	}
	parts := []*hist{trip, trip, trip, trip, sync}
	got := sumOfDraws("floor", parts, 1000, 7)
	for _, q := range []float64{got.P50, got.P99, got.Max} {
		if q > 7 || q < 0.98*7 {
			t.Fatalf("sum of 4 × 1 ms and 3 ms: %+v", got)
		}
	}
	if again := sumOfDraws("floor", parts, 1000, 7); again != got {
		t.Fatalf("the same seed drew %+v, then %+v", got, again)
	}
}

// TestSumOfDrawsFollowsTheMix: 1 ms and 10 ms in equal parts, four
// draws: the sum is 4 + 9k ms with k long draws, k binomial (4, 1/2), so
// its p50 is 22 ms (k = 2: cumulative 11/16), p90 31 ms (15/16) and p99
// 40 ms; and no quantile of the sum is below that of one of its terms.
func TestSumOfDrawsFollowsTheMix(t *testing.T) {
	t.Parallel()
	h := &hist{}
	for range 500 {
		h.add(time.Millisecond)
		h.add(10 * time.Millisecond)
	}
	got := sumOfDraws("mix", []*hist{h, h, h, h}, 100_000, 1)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", got.P50, 22}, {"p90", got.P90, 31}, {"p99", got.P99, 40}} {
		if c.got > c.want || c.got < 0.98*c.want {
			t.Errorf("%s %.2f ms, want %.0f", c.name, c.got, c.want)
		}
	}
	if got.P50 < 0.99*h.ms(50) || got.P99 < 0.99*h.ms(99) {
		t.Fatalf("a sum below one of its terms: %+v against %+v", got, h.summary("term"))
	}
}

// TestProbeSyncTimesEachSync: the probe syncs at the given rate, one
// latency each, and leaves nothing behind.
func TestProbeSyncTimesEachSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, err := probeSync(dir, 200, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if h.count() != 20 || h.ms(50) <= 0 {
		t.Fatalf("%d syncs, p50 %.3f ms; want 20 taking some time", h.count(), h.ms(50))
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Fatalf("left %v (%v)", left, err)
	}
}

// TestLatencyFloorCountsEveryTrip: lifecycleTrips raw trips and one
// fdatasync, whatever their lengths.
func TestLatencyFloorCountsEveryTrip(t *testing.T) {
	t.Parallel()
	trip, sync := &hist{}, &hist{}
	trip.add(2 * time.Millisecond)
	sync.add(5 * time.Millisecond)
	lf := newLatencyFloor(trip, sync)
	want := float64(lifecycleTrips)*2 + 5
	if lf.Floor.P50 > want || lf.Floor.P50 < 0.98*want || lf.KafkaTrips != lifecycleTrips || lf.Fdatasync.Count != 1 {
		t.Fatalf("floor %+v, want p50 %.0f ms", lf, want)
	}
}
