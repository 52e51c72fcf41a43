package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cpuUse is CPU time spent during a phase, per document, in milliseconds.
// Process is this process: the node under test, and the bench's own
// clients and webhook receiver (with the embedded broker, the broker
// too). Broker is the external broker processes given by --broker-pids,
// read from /proc; absent without them.
type cpuUse struct {
	ProcessMsPerDoc float64  `json:"process_ms_per_document"`
	BrokerMsPerDoc  *float64 `json:"broker_ms_per_document,omitempty"`
	// BrokerJITMsPerDoc is the part of BrokerMsPerDoc that the brokers'
	// JIT compiler threads ran: a JVM compiles its hot paths for minutes
	// after it starts, on the same cores as the node, and a broker still
	// doing so is not the broker of a long-running cluster. Absent
	// without --broker-pids.
	BrokerJITMsPerDoc *float64 `json:"broker_jit_ms_per_document,omitempty"`
}

// cpuClock reads the CPU time used so far by this process and by the
// broker processes.
type cpuClock struct{ brokerPIDs []int }

type cpuReading struct {
	process, broker, brokerJIT time.Duration
	// processRead is this process's CPU once the brokers were read. An
	// interval runs from one reading's processRead to a later one's
	// process, so that neither counts the reading of the brokers' stat
	// files (one for each of a JVM's hundred-odd threads).
	processRead         time.Duration
	processOK, brokerOK bool
}

func (c cpuClock) read() cpuReading {
	var r cpuReading
	r.process, r.processOK = processCPU()
	if len(c.brokerPIDs) > 0 {
		r.brokerOK = true
		for _, pid := range c.brokerPIDs {
			d, err := procCPU(pid)
			if err != nil {
				r.brokerOK = false
				break
			}
			jit, err := procJIT(pid)
			if err != nil {
				r.brokerOK = false
				break
			}
			r.broker += d
			r.brokerJIT += jit
		}
	}
	var ok bool
	r.processRead, ok = processCPU()
	r.processOK = r.processOK && ok
	return r
}

// use is the CPU spent between r and a later reading, per document; nil
// where this system cannot tell.
func (r cpuReading) use(later cpuReading, docs int) *cpuUse {
	if docs <= 0 || !r.processOK || !later.processOK {
		return nil
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(docs) }
	u := &cpuUse{ProcessMsPerDoc: per(later.process - r.processRead)}
	if r.brokerOK && later.brokerOK {
		b := per(later.broker - r.broker)
		// A compiler thread that exits takes its time with it (HotSpot
		// stops idle ones), so the sum can shrink: counted as none.
		jit := per(max(later.brokerJIT-r.brokerJIT, 0))
		u.BrokerMsPerDoc, u.BrokerJITMsPerDoc = &b, &jit
	}
	return u
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU
// times: 100 on every Linux architecture Go supports.
const clockTicks = 100

// procCPU reads the user and system time of process pid from
// /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	_, d, err := parseStat(b)
	if err != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// procJIT is the user and system time of process pid's JIT compiler
// threads, from /proc/PID/task/*/stat. A thread that ends while it is
// read is skipped.
func procJIT(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/stat")
		if err != nil {
			continue
		}
		comm, d, err := parseStat(b)
		if err != nil {
			return 0, fmt.Errorf("bench: %s/%s/stat: %w", dir, t.Name(), err)
		}
		if jitThread(comm) {
			sum += d
		}
	}
	return sum, nil
}

// jitThread reports whether a thread's name is one of HotSpot's compiler
// threads ("C2 CompilerThread0", cut by the kernel to 15 bytes).
func jitThread(comm string) bool {
	return strings.HasPrefix(comm, "C1 Compiler") || strings.HasPrefix(comm, "C2 Compiler")
}

// parseStat reads the command name and the user and system time from a
// /proc stat line.
func parseStat(b []byte) (comm string, cpu time.Duration, err error) {
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses; utime and stime are fields 14 and 15, the 12th and
	// 13th after it.
	s := string(b)
	open, i := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || i < open {
		return "", 0, errors.New("no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return "", 0, fmt.Errorf("%d fields", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("utime %q, stime %q", f[11], f[12])
	}
	return s[open+1 : i], time.Duration(ut+st) * time.Second / clockTicks, nil
}

// parsePIDs parses a comma-separated list of process ids.
func parsePIDs(s string) ([]int, error) {
	var pids []int
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--broker-pids: %q is not a process id", p)
		}
		pids = append(pids, n)
	}
	return pids, nil
}

// requestsPerDoc is the Kafka requests between two counts, per document,
// by API; APIs with none are left out.
func requestsPerDoc(before, after map[string]int64, docs int) map[string]float64 {
	if docs <= 0 {
		return nil
	}
	out := map[string]float64{}
	for api, n := range after {
		if d := n - before[api]; d > 0 {
			out[api] = float64(d) / float64(docs)
		}
	}
	return out
}

// printRequests prints a phase's Kafka requests per document, the most
// frequent first, and with the broker's CPU what one request cost it.
func printRequests(w io.Writer, p *phaseResult) {
	if len(p.KafkaRequests) == 0 {
		return
	}
	apis := slices.SortedFunc(maps.Keys(p.KafkaRequests), func(a, b string) int {
		return cmp.Or(cmp.Compare(p.KafkaRequests[b], p.KafkaRequests[a]), cmp.Compare(a, b))
	})
	total := 0.0
	fmt.Fprintf(w, "  Kafka requests per document:")
	for _, api := range apis {
		total += p.KafkaRequests[api]
		fmt.Fprintf(w, " %s %.2f,", api, p.KafkaRequests[api])
	}
	fmt.Fprintf(w, " in all %.2f", total)
	if c := p.CPU; c != nil && c.BrokerMsPerDoc != nil && total > 0 {
		fmt.Fprintf(w, " (broker CPU %.0f µs a request)", *c.BrokerMsPerDoc*1000/total)
	}
	fmt.Fprintln(w)
}
