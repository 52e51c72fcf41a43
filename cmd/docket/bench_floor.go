package main

import (
	"fmt"
	"io"
	"time"
)

// The CPU floor answers one question about the consume-side targets: could
// any replay or apply path that keeps these views in Pebble reach its
// target on this machine? At a target rate the machine's cores give each
// event a fixed number of microseconds of CPU. Reading the log, decoding
// it, folding its documents and batch summaries (only those, in maps) and
// writing the views it ends with are each measured in this run, on the
// same records, with their CPU; together they are the least any such path
// pays per event. Where that least is more than the cores give, the
// target is out of reach for these views on this machine, however the rest
// is written; where it is less, the gap is the code's.

// recordCPU is CPU per record of a measured ceiling, in microseconds:
// this process (the client, and with the embedded broker the broker too)
// and the external broker's processes (--broker-pids), absent without them.
type recordCPU struct {
	ProcessUs float64  `json:"process_us_per_record"`
	BrokerUs  *float64 `json:"broker_us_per_record,omitempty"`
}

// total is the process's and the broker's CPU per record together.
func (c *recordCPU) total() float64 {
	if c.BrokerUs == nil {
		return c.ProcessUs
	}
	return c.ProcessUs + *c.BrokerUs
}

// stopwatch times a ceiling and reads the CPU spent in the same window.
type stopwatch struct {
	clock cpuClock
	cpu   cpuReading
	start time.Time
}

func (c cpuClock) start() stopwatch {
	return stopwatch{clock: c, cpu: c.read(), start: time.Now()}
}

// rate is n records (and bytes) since the stopwatch started, with their
// CPU where this system reports it.
func (s stopwatch) rate(n int, bytes int64) rate {
	r := newRate(n, bytes, time.Since(s.start))
	later := s.clock.read()
	if n <= 0 || !s.cpu.processOK || !later.processOK {
		return r
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	r.CPU = &recordCPU{ProcessUs: per(later.process - s.cpu.processRead)}
	if s.cpu.brokerOK && later.brokerOK {
		b := per(later.broker - s.cpu.broker)
		r.CPU.BrokerUs = &b
	}
	return r
}

// Targets of the consume side, as fractions of raw consume (issue 9).
const (
	replayTarget = 0.5
	applyTarget  = 0.3
)

// cpuFloor is the least CPU per event the consume-side targets need, in
// microseconds, against what the machine's cores give at their rates.
type cpuFloor struct {
	Cores int `json:"cores"`
	// BrokerCounted is false when the broker's CPU could not be read (an
	// external broker without --broker-pids): the floor is then lower
	// than it should be.
	BrokerCounted bool `json:"broker_counted"`
	// Per event: reading the log (the raw consume's client and the
	// broker), decoding it with docket's codec, folding it (FoldUs), and
	// writing the views the replay ended with (only their final keys, each once, no reads), with
	// and without the history's copies of the events (he/, which a
	// history kept as positions in the log would not write). Store is the
	// cheaper of Pebble's two ways in: batches, and an sstable ingested.
	ConsumeUs float64 `json:"consume_us_per_event"`
	DecodeUs  float64 `json:"decode_us_per_event"`
	// FoldUs is the domain's fold of documents and batch summaries in
	// maps (foldPath): the least a fold of these views does.
	FoldUs          float64     `json:"fold_us_per_event"`
	StoreUs         float64     `json:"store_us_per_event"`
	StoreNoCopiesUs float64     `json:"store_without_copies_us_per_event"`
	Ways            [2]storeWay `json:"store_ways"`
	Replay          floorTarget `json:"replay"`
	Apply           floorTarget `json:"apply"`
}

// storeWay is what one way into Pebble cost per event.
type storeWay struct {
	Name       string  `json:"name"`
	Us         float64 `json:"us_per_event"`
	NoCopiesUs float64 `json:"without_copies_us_per_event"`
}

// floorTarget is one target's floor. Share above 1 means the target needs
// more CPU than the machine has.
type floorTarget struct {
	Target        float64 `json:"target"`            // the fraction of raw consume
	HaveUs        float64 `json:"have_us_per_event"` // the cores' CPU per event at that rate
	NeedUs        float64 `json:"need_us_per_event"`
	Share         float64 `json:"share"`
	ShareNoCopies float64 `json:"share_without_copies"`
}

// newFloor computes the floor from the ceilings, or nil where their CPU
// was not measured. The replay reads, decodes, folds and writes; the apply
// path (measured without the network) does all but read; either writes
// the cheaper of Pebble's two ways.
func newFloor(c *ceilings, cores int) *cpuFloor {
	for _, r := range []rate{c.RawConsume, c.Decode, c.Fold, c.RawPebble, c.RawPebbleNoCopies, c.RawIngest, c.RawIngestNoCopies} {
		if r.CPU == nil {
			return nil
		}
	}
	if c.ViewKeys == 0 || c.Replay.Records == 0 || c.RawConsume.PerSec == 0 || cores <= 0 {
		return nil
	}
	events := float64(c.Replay.Records)
	perEvent := func(r rate) float64 { return r.CPU.ProcessUs * float64(r.Records) / events }
	f := &cpuFloor{
		Cores:         cores,
		BrokerCounted: c.RawConsume.CPU.BrokerUs != nil,
		ConsumeUs:     c.RawConsume.CPU.total(),
		DecodeUs:      c.Decode.CPU.ProcessUs,
		FoldUs:        c.Fold.CPU.ProcessUs,
		Ways: [2]storeWay{
			{Name: "batches", Us: perEvent(c.RawPebble), NoCopiesUs: perEvent(c.RawPebbleNoCopies)},
			{Name: "ingestion", Us: perEvent(c.RawIngest), NoCopiesUs: perEvent(c.RawIngestNoCopies)},
		},
	}
	f.StoreUs = min(f.Ways[0].Us, f.Ways[1].Us)
	f.StoreNoCopiesUs = min(f.Ways[0].NoCopiesUs, f.Ways[1].NoCopiesUs)
	target := func(frac, need, needNoCopies float64) floorTarget {
		have := float64(cores) * 1e6 / (frac * c.RawConsume.PerSec)
		return floorTarget{Target: frac, HaveUs: have, NeedUs: need, Share: need / have, ShareNoCopies: needNoCopies / have}
	}
	f.Replay = target(replayTarget, f.ConsumeUs+f.DecodeUs+f.FoldUs+f.StoreUs, f.ConsumeUs+f.DecodeUs+f.FoldUs+f.StoreNoCopiesUs)
	f.Apply = target(applyTarget, f.DecodeUs+f.FoldUs+f.StoreUs, f.DecodeUs+f.FoldUs+f.StoreNoCopiesUs)
	return f
}

func (f *cpuFloor) print(w io.Writer) {
	fmt.Fprintf(w, "\nCPU floor of the consume-side targets (µs of CPU per event; %d cores):\n", f.Cores)
	broker := ""
	if !f.BrokerCounted {
		broker = " (the broker's not counted: no --broker-pids)"
	}
	fmt.Fprintf(w, "  read the log %.2f%s, decode %.2f, fold documents and batches %.2f, write the final views %.2f (%.2f without the history's copies):",
		f.ConsumeUs, broker, f.DecodeUs, f.FoldUs, f.StoreUs, f.StoreNoCopiesUs)
	for _, way := range f.Ways {
		fmt.Fprintf(w, " %s %.2f (%.2f)", way.Name, way.Us, way.NoCopiesUs)
	}
	fmt.Fprintln(w)
	for _, t := range []struct {
		name string
		t    floorTarget
	}{{"replay", f.Replay}, {"apply", f.Apply}} {
		fmt.Fprintf(w, "  %-6s at %.1f x raw consume: needs at least %.2f, the cores give %.2f: %.2f of the machine (%.2f without the copies)\n",
			t.name, t.t.Target, t.t.NeedUs, t.t.HaveUs, t.t.Share, t.t.ShareNoCopies)
	}
}
