package main

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestProcCPUReadsAProcess: the broker's CPU is read from /proc in the
// same unit as this process's own (getrusage); burning CPU here moves both.
func TestProcCPUReadsAProcess(t *testing.T) {
	t.Parallel()
	self0, ok := processCPU()
	if !ok {
		t.Fatal("getrusage failed")
	}
	proc0, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for {
		if d, _ := processCPU(); d-self0 >= 200*time.Millisecond {
			break
		}
		for i := range 100_000 {
			x += i
		}
	}
	proc1, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in ticks of 10 ms; other tests run beside this one, so
	// the process may have used more.
	if d := proc1 - proc0; d < 150*time.Millisecond {
		t.Fatalf("200 ms of CPU burnt, /proc saw %v (%d)", d, x)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("a process that cannot exist was read")
	}
}

func TestParsePIDs(t *testing.T) {
	t.Parallel()
	if p, err := parsePIDs(" 12, 34,"); err != nil || !slices.Equal(p, []int{12, 34}) {
		t.Fatalf("%v, %v", p, err)
	}
	if p, err := parsePIDs(""); err != nil || p != nil {
		t.Fatalf("empty: %v, %v", p, err)
	}
	for _, bad := range []string{"x", "0", "-3", "1;2"} {
		if _, err := parsePIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRequestsPerDocument(t *testing.T) {
	t.Parallel()
	got := requestsPerDoc(map[string]int64{"Produce": 10, "Fetch": 4, "Metadata": 2}, map[string]int64{"Produce": 50, "Fetch": 24, "Metadata": 2, "OffsetCommit": 1}, 20)
	want := map[string]float64{"Produce": 2, "Fetch": 1, "OffsetCommit": 0.05}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	broker := 3.0 // ms a document: 3.05 requests at about 984 µs each
	var out strings.Builder
	printRequests(&out, &phaseResult{KafkaRequests: got, CPU: &cpuUse{BrokerMsPerDoc: &broker}})
	if line := "  Kafka requests per document: Produce 2.00, Fetch 1.00, OffsetCommit 0.05, in all 3.05 (broker CPU 984 µs a request)\n"; out.String() != line {
		t.Fatalf("printed %q, want %q", out.String(), line)
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	// A thread's name may hold spaces and parentheses; the last ')' ends it.
	line := "4242 (C2 Compiler) x)) S 1 4242 4242 0 -1 4194560 9 0 0 0 250 31 0 0 20 0 40 0 1 0 0\n"
	comm, d, err := parseStat([]byte(line))
	if err != nil || comm != "C2 Compiler) x)" || d != 2810*time.Millisecond {
		t.Fatalf("parsed %q, %v, %v", comm, d, err)
	}
	for _, bad := range []string{"4242 C2 S 1", "4242 (java) S 1 2 3", "4242 (java) S 1 4242 4242 0 -1 4194560 9 0 0 0 x 31 0 0"} {
		if _, _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for name, want := range map[string]bool{"C2 CompilerThre": true, "C1 CompilerThre": true, "GC Thread#0": false, "data-plane-kafk": false, "java": false} {
		if jitThread(name) != want {
			t.Errorf("jitThread(%q) = %v", name, !want)
		}
	}
}

func TestWarmedUp(t *testing.T) {
	t.Parallel()
	share := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		name       string
		prev, last warmRound
		want       bool
	}{
		{"steady, no broker read", warmRound{DocsPerSec: 500}, warmRound{DocsPerSec: 540}, true},
		{"unsteady", warmRound{DocsPerSec: 500}, warmRound{DocsPerSec: 560}, false},
		{"steady and quiet", warmRound{DocsPerSec: 500, BrokerJITShare: share(0.02)}, warmRound{DocsPerSec: 460, BrokerJITShare: share(0.10)}, true},
		{"compiling in the last", warmRound{DocsPerSec: 500, BrokerJITShare: share(0)}, warmRound{DocsPerSec: 500, BrokerJITShare: share(0.11)}, false},
		{"compiling in the one before", warmRound{DocsPerSec: 500, BrokerJITShare: share(0.5)}, warmRound{DocsPerSec: 500, BrokerJITShare: share(0)}, false},
	} {
		if got := warmedUp(c.prev, c.last); got != c.want {
			t.Errorf("%s: warmedUp = %v", c.name, got)
		}
	}
}

// TestWarmUpLine: the text report says what ended the warm-up, and a
// round whose broker used no measurable CPU prints without a share.
func TestWarmUpLine(t *testing.T) {
	t.Parallel()
	share := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		rep  benchReport
		want string
	}{
		{benchReport{WarmUp: []warmRound{{Documents: 400, DocsPerSec: 300}, {Documents: 400, DocsPerSec: 310}}, Warm: true},
			"warm-up: 300 310 documents/s (closed-loop rounds of 400 documents until two in a row are within 10 %)\n"},
		{benchReport{WarmUp: []warmRound{{Documents: 400, DocsPerSec: 300, BrokerJITShare: share(0.5)}, {Documents: 400, DocsPerSec: 310}}},
			"warm-up: 300 310 documents/s (closed-loop rounds of 400 documents until two in a row are within 10 % and the broker's JIT took at most 10 % of its CPU in both; the last two did not: the runs below met a broker, or a node, still warming up)\n"},
	} {
		var out strings.Builder
		c.rep.print(&out)
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("printed\n%s\nwant the line\n%s", out.String(), c.want)
		}
	}
	if s := (warmRound{DocsPerSec: 412.4, BrokerJITShare: share(0.081)}).String(); s != "412 documents/s, the broker's JIT 8 % of its CPU" {
		t.Errorf("round: %q", s)
	}
}

// TestCPUIntervalLeavesOutTheReadings: an interval runs from the end of
// one reading to the start of the next, so the process's CPU for reading
// the brokers' stat files is in neither.
func TestCPUIntervalLeavesOutTheReadings(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	r := cpuReading{process: 10 * ms, processRead: 12 * ms, broker: 100 * ms, brokerJIT: 40 * ms, processOK: true, brokerOK: true}
	later := cpuReading{process: 20 * ms, processRead: 25 * ms, broker: 160 * ms, brokerJIT: 30 * ms, processOK: true, brokerOK: true}
	u := r.use(later, 2)
	// A compiler thread ended in between: its time left the sum.
	if u == nil || u.ProcessMsPerDoc != 4 || *u.BrokerMsPerDoc != 30 || *u.BrokerJITMsPerDoc != 0 {
		t.Fatalf("%+v", u)
	}
	// The ceilings' stopwatch too: timed from the end of its first
	// reading (now), not from its start (an hour before, here).
	now, _ := processCPU()
	sw := stopwatch{clock: cpuClock{}, cpu: cpuReading{process: now - time.Hour, processRead: now, processOK: true}, start: time.Now()}
	if rt := sw.rate(1000, 0); rt.CPU == nil || rt.CPU.ProcessUs < 0 || time.Duration(rt.CPU.ProcessUs*1000)*time.Microsecond > time.Minute {
		t.Fatalf("stopwatch rate %+v", rt.CPU)
	}
}
