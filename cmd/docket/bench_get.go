package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
}

// loadGet is the fixed-rate, open-loop GET generator (`docket bench
// --load-get URL --rate R --duration D`, the key in DOCKET_BENCH_KEY). It
// runs in its own process so that its CPU and garbage collection are not
// the node's. Plain wrk cannot hold a fixed rate (it is closed-loop), so it
// cannot measure latency at 2,000 requests/s. Each request is sent at its
// scheduled time whatever the earlier ones do, and its latency counts from
// that scheduled time, so a stalled server cannot hide its stall by slowing
// the generator down (coordinated omission).
func loadGet(ctx context.Context, url, key string, perSec float64, d time.Duration, stdout io.Writer) error {
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024}}
	var h hist
	var sent, non2xx, errs, late atomic.Int64
	var wg sync.WaitGroup
	n := int(perSec * d.Seconds())
	every := time.Duration(float64(time.Second) / perSec)
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * every)
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		} else if wait < -time.Millisecond {
			late.Add(1)
		}
		if ctx.Err() != nil {
			break
		}
		sent.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := cl.Do(req)
			if err != nil {
				errs.Add(1)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			h.add(time.Since(at))
			if resp.StatusCode/100 != 2 {
				non2xx.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	res := getResult{URL: url, Rate: perSec, Achieved: float64(sent.Load()) / el.Seconds(), Sent: int(sent.Load()),
		Non2xx: int(non2xx.Load()), Errors: int(errs.Load()), Late: int(late.Load()),
		Latency: h.summary("GET"), Process: "separate (pid " + strconv.Itoa(os.Getpid()) + ")", Corrected: true}
	return json.NewEncoder(stdout).Encode(res)
}

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
