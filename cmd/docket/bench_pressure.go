package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// pressure is how much of a phase the machine's tasks spent stalled, from
// Linux's pressure stall information (/proc/pressure): "some" is the share
// of the phase's wall time in which at least one task waited for CPU or for
// I/O, io "full" the share in which every task that wanted to run waited
// for I/O. On a VM shared with other work this tells a run slowed by the
// machine from one slowed by the code: a traced GET run of 2026-12-06 had
// the whole bench process stand still for 100 ms while a blob's fsync took
// 102 ms (BENCHMARKS.md, "The GET generator's share of the machine").
type pressure struct {
	CPUSomePct float64 `json:"cpu_some_pct"`
	IOSomePct  float64 `json:"io_some_pct"`
	IOFullPct  float64 `json:"io_full_pct"`
}

// pressureReading is the kernel's cumulative stall totals at one moment.
type pressureReading struct {
	at                      time.Time
	cpuSome, ioSome, ioFull time.Duration
	ok                      bool
}

// readPressure reads /proc/pressure/cpu and io; ok is false where the
// kernel has no pressure stall information (not Linux, or built or booted
// without it).
func readPressure() pressureReading {
	r := pressureReading{at: time.Now()}
	cpu, err1 := os.ReadFile("/proc/pressure/cpu")
	io, err2 := os.ReadFile("/proc/pressure/io")
	if err1 != nil || err2 != nil {
		return r
	}
	var ok1, ok2, ok3 bool
	r.cpuSome, ok1 = stallTotal(cpu, "some")
	r.ioSome, ok2 = stallTotal(io, "some")
	r.ioFull, ok3 = stallTotal(io, "full")
	r.ok = ok1 && ok2 && ok3
	return r
}

// stallTotal finds the total= field (microseconds) of the line that starts
// with kind in a /proc/pressure file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
func stallTotal(b []byte, kind string) (time.Duration, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 || string(f[0]) != kind {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := bytes.CutPrefix(kv, []byte("total=")); ok {
				us, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil || us < 0 {
					return 0, false
				}
				return time.Duration(us) * time.Microsecond, true
			}
		}
	}
	return 0, false
}

// since is the stall between r and a later reading, as shares of the wall
// time between them; nil where either reading failed.
func (r pressureReading) since(later pressureReading) *pressure {
	wall := later.at.Sub(r.at)
	if !r.ok || !later.ok || wall <= 0 {
		return nil
	}
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(wall) }
	return &pressure{CPUSomePct: pct(later.cpuSome - r.cpuSome), IOSomePct: pct(later.ioSome - r.ioSome), IOFullPct: pct(later.ioFull - r.ioFull)}
}

func (p *pressure) String() string {
	return fmt.Sprintf("some task waited for CPU %.1f %% of the time, for I/O %.1f %%; every task for I/O %.1f %%", p.CPUSomePct, p.IOSomePct, p.IOFullPct)
}
