package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// getResult is what the GET load generator reports.
type getResult struct {
	URL       string  `json:"url"`
	Rate      float64 `json:"target_rate"`
	Achieved  float64 `json:"achieved_rate"`
	Sent      int     `json:"sent"`
	Non2xx    int     `json:"non_2xx"`
	Errors    int     `json:"errors"`
	Late      int     `json:"sent_over_1ms_late"`
	Latency   latency `json:"latency"`
	Process   string  `json:"process"`
	Corrected bool    `json:"coordinated_omission_corrected"`
	// CPUPerRequest is the generator's own CPU time per request sent, in
	// microseconds: on a machine it shares with the node, what it takes
	// is not the node's. Absent where the system cannot tell.
	CPUPerRequest *float64 `json:"generator_cpu_us_per_request,omitempty"`
}

// loadGet is the fixed-rate, open-loop GET generator (`docket bench
// --load-get URL --rate R --duration D`, the key in DOCKET_BENCH_KEY). It
// runs in its own process so that its CPU and garbage collection are not
// the node's. Plain wrk cannot hold a fixed rate (it is closed-loop), so it
// cannot measure latency at 2,000 requests/s. Each request is sent at its
// scheduled time whatever the earlier ones do, and its latency counts from
// that scheduled time, so a stalled server cannot hide its stall by slowing
// the generator down (coordinated omission).
//
// It shares the node's two cores, so it is built to cost little CPU: a
// fixed set of senders, each with one keep-alive connection, writes one
// prepared request and reads the answer with a parser of its own. Until
// 2026-12-06 it started a goroutine and an http.Client call per request
// and took about 160 µs of CPU per request, as much as the node took to
// answer it (BENCHMARKS.md, "The GET generator's share of the machine").
func loadGet(ctx context.Context, rawURL, key string, l getLoad, stdout io.Writer) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("bench: --load-get wants an http:// URL, not %q", rawURL)
	}
	req := []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nAuthorization: Bearer " + key + "\r\nUser-Agent: docket-bench\r\n\r\n")
	var h hist
	var sent, non2xx, errs, late, next atomic.Int64
	n := int64(l.perSec * l.d.Seconds())
	every := time.Duration(float64(time.Second) / l.perSec)
	cpu0, cpuOK := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for range l.senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := rawConn{addr: u.Host, timeout: l.timeout}
			defer c.close()
			// Each sender takes the next slot, waits for its time and sends:
			// when every sender is busy (a stalled server), the next slot is
			// sent late and still counted from its scheduled time.
			for i := next.Add(1) - 1; i < n && ctx.Err() == nil; i = next.Add(1) - 1 {
				at := start.Add(time.Duration(i) * every)
				if wait := time.Until(at); wait > 0 {
					time.Sleep(wait)
				} else if wait < -time.Millisecond {
					late.Add(1)
				}
				sent.Add(1)
				status, err := c.do(req, nil)
				if err != nil {
					errs.Add(1)
					continue
				}
				h.add(time.Since(at))
				if status/100 != 2 {
					non2xx.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	res := getResult{URL: rawURL, Rate: l.perSec, Achieved: float64(sent.Load()) / el.Seconds(), Sent: int(sent.Load()),
		Non2xx: int(non2xx.Load()), Errors: int(errs.Load()), Late: int(late.Load()),
		Latency: h.summary("GET"), Process: "separate (pid " + strconv.Itoa(os.Getpid()) + ")", Corrected: true}
	if cpu1, ok := processCPU(); ok && cpuOK && res.Sent > 0 {
		us := float64(cpu1-cpu0) / float64(time.Microsecond) / float64(res.Sent)
		res.CPUPerRequest = &us
	}
	return json.NewEncoder(stdout).Encode(res)
}

// getLoad is what the generator sends: perSec requests a second for d,
// from senders connections, each request failing after timeout.
type getLoad struct {
	perSec  float64
	d       time.Duration
	senders int
	timeout time.Duration
}

// getSenders is how many requests the generator has in flight at most:
// at 2,000/s a server would have to stall for 64 ms to keep them all
// busy, and past that the slots wait, counted from their scheduled time.
const getSenders = 128

// getTimeout is how long one request may take before it counts as an
// error, as the http.Client the generator used before.
const getTimeout = 10 * time.Second

// spawnGetLoad runs the GET generator as a child process of this binary and
// returns a function that waits for its report.
func spawnGetLoad(ctx context.Context, url, key string, perSec float64, d time.Duration) (func() (getResult, error), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "bench", "--load-get", url, "--rate", strconv.FormatFloat(perSec, 'f', -1, 64), "--duration", d.String())
	cmd.Env = append(os.Environ(), "DOCKET_BENCH_KEY="+key)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() (getResult, error) {
		var r getResult
		derr := json.NewDecoder(out).Decode(&r)
		if err := cmd.Wait(); err != nil {
			return r, fmt.Errorf("bench: GET load generator: %w", err)
		}
		return r, derr
	}, nil
}
