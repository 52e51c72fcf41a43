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
