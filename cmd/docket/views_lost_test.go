package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/projections"
)

// TestViewsDirectoryLost deletes a stopped node's Pebble directory: on start
// the node rebuilds every view from the log, serves again, and the rebuilt
// views equal the ones it lost, key for key.
func TestViewsDirectoryLost(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.WebhookAllowLoopback = true })
	for i := range 6 {
		if _, code := tn.upload("lost", fmt.Sprintf("inv-%d.txt", i), textInvoice(i), fmt.Sprintf("ref-%d", i)); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	if code := tn.do("POST", "/v1/batches/lost/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	tn.waitBatch("lost", func(b batchView) bool { return b.AllDone })
	var job struct {
		JobID string `json:"jobId"`
	}
	res := tn.results("lost")
	ids := make([]string, len(res.Documents))
	for i, d := range res.Documents {
		ids[i] = `"` + d.ID + `"`
	}
	if code := tn.do("POST", "/v1/documents/process", strings.NewReader(`{"documentIds":[`+strings.Join(ids, ",")+`]}`), "application/json", nil, &job); code != http.StatusAccepted {
		t.Fatalf("job: %d", code)
	}
	tn.waitFor(func() bool {
		var j struct{ Status string }
		return tn.get("/v1/jobs/"+job.JobID, &j) == http.StatusOK && j.Status == "completed"
	})
	before := map[string]string{}
	for _, p := range []string{"/v1/batches/lost", "/v1/batches/lost/results", "/v1/jobs/" + job.JobID, "/v1/batches", "/v1/api-keys"} {
		r := tn.call("GET", p, "Bearer "+tn.key, nil, "", nil)
		before[p] = string(r.body)
	}

	tn.stop()
	views := filepath.Join(tn.cfg.DataDir, "views")
	kept := filepath.Join(t.TempDir(), "views")
	if err := os.CopyFS(kept, os.DirFS(views)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(views); err != nil {
		t.Fatal(err)
	}
	tn.start()

	old, err := projections.Open(kept)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	snap, err := old.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	diff, err := projections.Diff(snap, tn.n.views, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(diff) > 0 {
		t.Fatalf("rebuilt views differ from the lost ones:\n%s", strings.Join(diff, "\n"))
	}
	for p, want := range before {
		r := tn.call("GET", p, "Bearer "+tn.key, nil, "", nil)
		if r.code != http.StatusOK || string(r.body) != want {
			t.Fatalf("GET %s after the rebuild: %d\n%s\nwant\n%s", p, r.code, r.body, want)
		}
	}
}
