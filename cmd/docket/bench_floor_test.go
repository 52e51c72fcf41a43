package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TestFloorAddsWhatEachPathMustDo checks the floor's sums and shares on
// figures whose answer is known: the replay pays reading, decoding,
// folding and writing; the apply path (no network) all but reading; each
// writes the cheaper way; and the cores' CPU per event is
// cores / (target × raw consume).
func TestFloorAddsWhatEachPathMustDo(t *testing.T) {
	t.Parallel()
	broker := 0.5
	c := &ceilings{
		// 1 M records/s read, 0.3 µs a record in the client, 0.5 in the broker.
		RawConsume: rate{Records: 1000, PerSec: 1e6, CPU: &recordCPU{ProcessUs: 0.3, BrokerUs: &broker}},
		Replay:     rate{Records: 1000, PerSec: 1e5},
		Decode:     rate{Records: 500, PerSec: 2e6, CPU: &recordCPU{ProcessUs: 0.6}},
		Fold:       rate{Records: 500, PerSec: 4e6, CPU: &recordCPU{ProcessUs: 0.4}},
		// 2,000 view keys for 1,000 events at 1 µs a key: 2 µs an event;
		// without the copies 1,200 keys at 0.5 µs: 0.6 µs an event.
		RawPebble:         rate{Records: 2000, CPU: &recordCPU{ProcessUs: 1}},
		RawPebbleNoCopies: rate{Records: 1200, CPU: &recordCPU{ProcessUs: 0.5}},
		// Ingestion is cheaper with the copies (1.6 µs an event) and
		// dearer without them (0.72): each side takes its cheaper way.
		RawIngest:         rate{Records: 2000, CPU: &recordCPU{ProcessUs: 0.8}},
		RawIngestNoCopies: rate{Records: 1200, CPU: &recordCPU{ProcessUs: 0.6}},
		ViewKeys:          2000,
	}
	f := newFloor(c, 2)
	if f == nil {
		t.Fatal("no floor from measured ceilings")
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("consume", f.ConsumeUs, 0.8)
	near("decode", f.DecodeUs, 0.6)
	near("fold", f.FoldUs, 0.4)
	near("store", f.StoreUs, 1.6)
	near("store without copies", f.StoreNoCopiesUs, 0.6)
	near("batches", f.Ways[0].Us, 2)
	near("ingestion without copies", f.Ways[1].NoCopiesUs, 0.72)
	// Replay at 0.5 × 1 M/s on 2 cores: 4 µs an event to spend.
	near("replay have", f.Replay.HaveUs, 4)
	near("replay need", f.Replay.NeedUs, 3.4)
	near("replay share", f.Replay.Share, 0.85)
	near("replay share without copies", f.Replay.ShareNoCopies, 0.6)
	// Apply at 0.3 × 1 M/s on 2 cores: 6.67 µs; it needs 2.6.
	near("apply have", f.Apply.HaveUs, 2/0.3)
	near("apply need", f.Apply.NeedUs, 2.6)
	near("apply share", f.Apply.Share, 2.6*0.3/2)
	near("apply share without copies", f.Apply.ShareNoCopies, 1.6*0.3/2)
	if !f.BrokerCounted {
		t.Error("the broker's CPU was given but not counted")
	}
	// Without the broker's CPU the floor says so.
	c.RawConsume.CPU.BrokerUs = nil
	if f := newFloor(c, 2); f == nil || f.BrokerCounted || f.ConsumeUs != 0.3 {
		t.Errorf("without the broker: %+v", f)
	}
	// A ceiling whose CPU was not read gives no floor at all.
	c.Decode.CPU = nil
	if f := newFloor(c, 2); f != nil {
		t.Errorf("floor without the decode's CPU: %+v", f)
	}
}

// TestStopwatchReadsTheSameWindow checks that a ceiling's CPU is what the
// process spent between the stopwatch's start and its rate, per record.
func TestStopwatchReadsTheSameWindow(t *testing.T) {
	t.Parallel()
	sw := cpuClock{}.start()
	if _, ok := processCPU(); !ok {
		// Where the system does not say, no figure is made up.
		if r := sw.rate(1000, 0); r.CPU != nil {
			t.Fatalf("CPU %+v on %s, which reports none", r.CPU, runtime.GOOS)
		}
		return
	}
	// Spin for 50 ms of CPU time, measured by the same clock from where
	// the stopwatch's window starts (after its reading).
	for {
		now, _ := processCPU()
		if now-sw.cpu.processRead >= 50*time.Millisecond {
			break
		}
	}
	r := sw.rate(1000, 0)
	if r.CPU == nil || r.CPU.BrokerUs != nil {
		t.Fatalf("CPU %+v, want the process's and no broker", r.CPU)
	}
	// 50 ms over 1,000 records is at least 50 µs a record; the wall time
	// bounds it from above on this process's cores.
	if r.CPU.ProcessUs < 50 || r.CPU.ProcessUs > r.Seconds*1e6/1000*float64(runtime.NumCPU())+1 {
		t.Errorf("%.1f µs a record over %.3f s", r.CPU.ProcessUs, r.Seconds)
	}
}

// TestRawIngestLeavesTheKeys checks that the ingestion ceiling measures a
// real write: the Pebble it ingested into holds every key and value.
func TestRawIngestLeavesTheKeys(t *testing.T) {
	t.Parallel()
	var kvs [][2][]byte
	for i := range 1000 {
		kvs = append(kvs, [2][]byte{fmt.Appendf(nil, "d/o1/doc_%05d", i), fmt.Appendf(nil, "value %d", i)})
	}
	dir := filepath.Join(t.TempDir(), "ingest")
	r, err := rawIngest(cpuClock{}, kvs, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Records != len(kvs) || r.PerSec <= 0 {
		t.Fatalf("rate %+v", r)
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n >= len(kvs) || !bytes.Equal(it.Key(), kvs[n][0]) || !bytes.Equal(it.Value(), kvs[n][1]) {
			t.Fatalf("key %d: %q = %q", n, it.Key(), it.Value())
		}
		n++
	}
	if n != len(kvs) {
		t.Fatalf("%d keys ingested, want %d", n, len(kvs))
	}
	if _, err := os.Stat(dir + ".sst"); !os.IsNotExist(err) {
		t.Errorf("the ingested file was left behind: %v", err)
	}
}
