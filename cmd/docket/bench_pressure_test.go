package main

import (
	"os"
	"testing"
	"time"
)

func TestStallTotal(t *testing.T) {
	t.Parallel()
	const io = "some avg10=1.50 avg60=0.90 avg300=0.20 total=1350083745\nfull avg10=0.40 avg60=0.10 avg300=0.00 total=785109257\n"
	for _, tc := range []struct {
		in, kind string
		want     time.Duration
		ok       bool
	}{
		{io, "some", 1350083745 * time.Microsecond, true},
		{io, "full", 785109257 * time.Microsecond, true},
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "some", 0, true},
		// cpu has a full line of zeros since Linux 5.13, none before.
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n", "full", 0, false},
		{"some avg10=0.00 total=x\n", "some", 0, false},
		{"some avg10=0.00 total=-4\n", "some", 0, false},
		{"", "some", 0, false},
	} {
		got, ok := stallTotal([]byte(tc.in), tc.kind)
		if got != tc.want || ok != tc.ok {
			t.Errorf("stallTotal(%q, %s) = %v, %v; want %v, %v", tc.in, tc.kind, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPressureSince(t *testing.T) {
	t.Parallel()
	at := time.Now()
	a := pressureReading{at: at, cpuSome: time.Second, ioSome: 2 * time.Second, ioFull: time.Second, ok: true}
	b := pressureReading{at: at.Add(10 * time.Second), cpuSome: 6 * time.Second, ioSome: 3 * time.Second, ioFull: 1100 * time.Millisecond, ok: true}
	p := a.since(b)
	if p == nil || p.CPUSomePct != 50 || p.IOSomePct != 10 || p.IOFullPct != 1 {
		t.Fatalf("since: %+v, want 50 %%, 10 %% and 1 %%", p)
	}
	if a.since(pressureReading{at: b.at}) != nil {
		t.Fatal("a failed reading must give no figure")
	}
	// On a kernel with pressure stall information, a real reading works.
	if _, err := os.Stat("/proc/pressure/io"); err == nil {
		r := readPressure()
		if !r.ok || r.ioSome < r.ioFull {
			t.Fatalf("reading %+v: io some must be at least io full", r)
		}
	}
}
