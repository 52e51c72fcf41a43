package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// The crash soak: steady uploads, batch processing, jobs and webhooks while
// the docket process is killed with SIGKILL at random moments and started
// again on the same data dir. DOCKET_SOAK_KILLS sets the number of kills
// (default 4, the CI run; e.g. 50 for a long run on demand).
const soakKillsEnv = "DOCKET_SOAK_KILLS"

// soakLedger is what the clients were told: the documents, batches and
// jobs the node acknowledged.
type soakLedger struct {
	mu        sync.Mutex
	docs      map[string]bool // acknowledged with 201
	batches   map[string]bool // batches with a webhook registered
	jobs      []string
	jobDocs   map[string]bool // jobs-surface documents in an acknowledged job
	freeDocs  []string        // jobs-surface documents acknowledged
	abandoned int             // requests given up after a kill held their key
}

func TestCrashSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("crash soak skipped in -short mode")
	}
	kills := 4
	if v := os.Getenv(soakKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", soakKillsEnv, v)
		}
		kills = n
	}
	recv := newReceiver(t)
	node := newSoakNode(t)
	node.start()
	t.Cleanup(func() {
		select {
		case <-node.done:
		default:
			node.kill()
		}
		if t.Failed() {
			t.Logf("--- docket log (tail):\n%s", tail(node.logPath))
		}
	})
	c := &soakClient{base: "http://" + node.listen, key: node.key(), hc: &http.Client{Timeout: 30 * time.Second}}
	var ep struct {
		ID string `json:"id"`
	}
	if _, err := c.postJSON("/v1/webhook-endpoints", map[string]any{"url": recv.url, "events": []string{"document.processed", "document.processing_failed"}}, "endpoint", &ep); err != nil || ep.ID == "" {
		t.Fatalf("webhook endpoint: %v %+v", err, ep)
	}

	led := &soakLedger{docs: map[string]bool{}, batches: map[string]bool{}, jobDocs: map[string]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := soakRound(c, led, recv.url, g, round); err != nil {
					errs <- err
					return
				}
			}
		}()
	}

	start := time.Now()
	for k := range kills {
		// A random moment: between 0.5 and 3 s of load.
		time.Sleep(time.Duration(500+rand.IntN(2500)) * time.Millisecond) // fault injection schedule, not synchronisation
		node.kill()
		t.Logf("kill %d/%d at %s", k+1, kills, time.Since(start).Round(time.Millisecond))
		node.start()
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	loadFor := time.Since(start)

	// The final sweep: what a cut-off request may have left unprocessed is
	// processed now (documents the log holds that no client heard of too).
	store := soakStore(t, node)
	defer store.Close()
	logDocs, _ := foldLog(readOrgLog(t, store))
	var unprocessed []string
	batchesInLog := map[string]bool{}
	for id, d := range logDocs {
		if d.BatchName != "" {
			batchesInLog[d.BatchName] = true
		} else if !led.jobDocs[id] {
			unprocessed = append(unprocessed, id)
		}
	}
	for b := range batchesInLog {
		if _, err := c.do("POST", "/v1/batches/"+b+"/process", nil, "", "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(unprocessed) > 0 {
		var acc struct {
			JobID string `json:"jobId"`
		}
		if _, err := c.postJSON("/v1/documents/process", map[string]any{"documentIds": unprocessed}, "", &acc); err != nil || acc.JobID == "" {
			t.Fatalf("sweep job: %v", err)
		}
		led.jobs = append(led.jobs, acc.JobID)
	}

	// Everything settles: every batch done, every job terminal, every
	// notification delivered.
	settled := func() (bool, string) {
		for b := range batchesInLog {
			var bv batchView
			if code, err := c.do("GET", "/v1/batches/"+b, nil, "", "", &bv); err != nil || code != 200 || !bv.AllDone {
				return false, "batch " + b
			}
		}
		for _, j := range led.jobs {
			var jv jobView
			if code, err := c.do("GET", "/v1/jobs/"+j, nil, "", "", &jv); err != nil || code != 200 || !terminalJob(jv.Status) {
				return false, "job " + j + " " + jv.Status
			}
		}
		for _, n := range soakNotifications(c, led, ep.ID) {
			if n.State != "delivered" {
				return false, "notification " + n.ID + " " + n.State
			}
		}
		return true, ""
	}
	deadline := time.Now().Add(3 * time.Minute)
	for ok, what := settled(); !ok; ok, what = settled() {
		if time.Now().After(deadline) {
			t.Fatalf("not settled within 3 minutes: %s", what)
		}
		time.Sleep(200 * time.Millisecond) // the node is another process: poll its views
	}

	// Every document the log holds — every one acknowledged among them —
	// reached exactly one terminal state.
	logDocs, terminal := foldLog(readOrgLog(t, store))
	lost, dupTerminal := 0, 0
	for id := range led.docs {
		if _, ok := logDocs[id]; !ok {
			lost++
			t.Errorf("acknowledged document %s is not in the log", id)
		}
	}
	for id, d := range logDocs {
		if !d.Status.Terminal() || terminal[id] != 1 {
			dupTerminal++
			t.Errorf("document %s (%s): status %s, %d terminal transitions", id, d.FileName, d.Status, terminal[id])
		}
	}
	// Every job's progress matches its rows.
	for _, j := range led.jobs {
		var jv jobView
		if _, err := c.do("GET", "/v1/jobs/"+j, nil, "", "", &jv); err != nil {
			t.Fatal(err)
		}
		if jv.Progress == nil {
			t.Errorf("job %s has no progress", j)
			continue
		}
		done, failed := 0, 0
		for _, r := range jv.Result.Documents {
			if r.Status == "completed" || r.Status == "failed" || r.Status == "cancelled" {
				done++
			}
			if r.Status == "failed" {
				failed++
			}
		}
		if jv.Progress.Total != len(jv.Result.Documents) || jv.Progress.Done != done || jv.Progress.Failed != failed {
			t.Errorf("job %s: progress %+v, rows %d (done %d, failed %d)", j, *jv.Progress, len(jv.Result.Documents), done, failed)
		}
	}
	// Every notification was delivered at least once; repeats share the
	// webhook-id.
	notes := soakNotifications(c, led, ep.ID)
	notLost, dups := 0, 0
	for _, n := range notes {
		switch got := recv.count(n.ID); {
		case got == 0:
			notLost++
			t.Errorf("notification %s (%s) recorded delivered but never received", n.ID, n.Type)
		case got > 1:
			dups += got - 1
		}
	}
	batchNotes := 0
	for b := range led.batches {
		if batchesInLog[b] {
			batchNotes++
		}
	}

	// The last stop is a kill too; then the views left on disk must equal
	// a rebuild from the log.
	store.Close()
	node.kill()
	diff := soakVerify(t, node)
	if len(diff) > 0 {
		t.Errorf("live views differ from a rebuild:\n%s", strings.Join(diff, "\n"))
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	t.Logf("SOAK kills=%d load=%s documents_acknowledged=%d documents_in_log=%d jobs=%d notifications=%d deliveries_received=%d duplicates=%d abandoned_requests=%d documents_lost=%d duplicate_terminal=%d notifications_lost=%d views_diff=%d",
		kills, loadFor.Round(time.Second), len(led.docs), len(logDocs), len(led.jobs), len(notes), len(notes)+dups, dups, led.abandoned, lost, dupTerminal, notLost, len(diff))
	if len(notes) < batchNotes {
		t.Errorf("%d notifications for %d batches with a webhook", len(notes), batchNotes)
	}
}

func terminalJob(s string) bool {
	return slices.Contains([]string{"completed", "completed_with_failures", "failed", "cancelled"}, s)
}

// soakRound is one client's round: a batch of uploads with a webhook,
// processed; every other round a jobs-surface preprocess job as well.
func soakRound(c *soakClient, led *soakLedger, hook string, g, round int) error {
	batch := fmt.Sprintf("soak-%d-%d", g, round)
	note := func(err error) error {
		if err == errAbandoned {
			led.mu.Lock()
			led.abandoned++
			led.mu.Unlock()
			return nil
		}
		return err
	}
	for i := range 3 {
		var d docView
		content := textInvoice(round*10 + i)
		if (round+i)%7 == 0 {
			content = []byte("%PDF-1.4\n%garbage that is no PDF")
		}
		code, err := c.upload("/v1/batches/"+batch+"/documents", fmt.Sprintf("inv-%d.txt", i), batch+"-up-"+strconv.Itoa(i), content, &d)
		if err = note(err); err != nil {
			return err
		}
		if code == http.StatusCreated {
			led.mu.Lock()
			led.docs[d.ID] = true
			led.mu.Unlock()
		} else if code != http.StatusConflict {
			return fmt.Errorf("upload to %s: %d", batch, code)
		}
	}
	b, _ := json.Marshal(map[string]string{"url": hook})
	if code, err := c.do("PUT", "/v1/batches/"+batch+"/webhook", b, "application/json", "", nil); err != nil {
		return err
	} else if code == http.StatusOK {
		led.mu.Lock()
		led.batches[batch] = true
		led.mu.Unlock()
	}
	if _, err := c.do("POST", "/v1/batches/"+batch+"/process", nil, "", batch+"-process", nil); note(err) != nil {
		return err
	}
	if round%2 == 1 {
		return nil
	}
	var ids []string
	for i := range 2 {
		var out struct {
			DocumentID string `json:"documentId"`
		}
		code, err := c.upload("/v1/documents", fmt.Sprintf("job-%d.txt", i), batch+"-job-up-"+strconv.Itoa(i), textInvoice(round+i), &out)
		if err = note(err); err != nil {
			return err
		}
		if code == http.StatusCreated {
			ids = append(ids, out.DocumentID)
			led.mu.Lock()
			led.docs[out.DocumentID] = true
			led.mu.Unlock()
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var acc struct {
		JobID string `json:"jobId"`
	}
	code, err := c.postJSON("/v1/documents/process", map[string]any{"documentIds": ids}, batch+"-job", &acc)
	if err = note(err); err != nil {
		return err
	}
	if code == http.StatusAccepted {
		led.mu.Lock()
		led.jobs = append(led.jobs, acc.JobID)
		for _, id := range ids {
			led.jobDocs[id] = true
		}
		led.mu.Unlock()
	}
	return nil
}

type soakNote struct {
	ID    string `json:"notification_id"`
	Type  string `json:"type"`
	State string `json:"state"`
}

// soakNotifications lists every notification of the soak's batches and of
// its endpoint.
func soakNotifications(c *soakClient, led *soakLedger, endpoint string) []soakNote {
	var out []soakNote
	led.mu.Lock()
	batches := make([]string, 0, len(led.batches))
	for b := range led.batches {
		batches = append(batches, b)
	}
	led.mu.Unlock()
	for _, b := range batches {
		var d struct {
			Deliveries []soakNote `json:"deliveries"`
		}
		if _, err := c.do("GET", "/v1/batches/"+b+"/webhook/deliveries", nil, "", "", &d); err == nil {
			out = append(out, d.Deliveries...)
		}
	}
	var d struct {
		Deliveries []soakNote `json:"deliveries"`
	}
	if _, err := c.do("GET", "/v1/webhook-endpoints/"+endpoint+"/deliveries", nil, "", "", &d); err == nil {
		out = append(out, d.Deliveries...)
	}
	return out
}

// soakStore connects to the running node's embedded broker.
func soakStore(t *testing.T, node *soakNode) *eventstore.Store {
	t.Helper()
	addr, err := os.ReadFile(filepath.Join(node.dataDir, "broker.addr"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := eventstore.Open(ctx, []string{strings.TrimSpace(string(addr))}, eventstore.Prefix("docket"), eventstore.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// soakVerify opens the killed node's broker log and views in this process
// and compares the views with a rebuild from the log up to the same
// offsets (what `docket verify` does).
func soakVerify(t *testing.T, node *soakNode) []string {
	t.Helper()
	broker, err := eventstore.StartEmbedded(filepath.Join(node.dataDir, "kafka"), "127.0.0.1:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := eventstore.Open(ctx, []string{broker.Addr()}, eventstore.Prefix("docket"), eventstore.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	live, err := projections.Open(filepath.Join(node.dataDir, "views"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	snap, err := live.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	rebuilt, err := projections.Rebuild(ctx, store, t.TempDir(), snap.Offsets)
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	diff, err := projections.Diff(snap, rebuilt, 10)
	if err != nil {
		t.Fatal(err)
	}
	applied := int64(0)
	for _, o := range snap.Offsets {
		applied += o
	}
	if applied == 0 {
		t.Fatal("the killed node's views applied nothing")
	}
	return diff
}
