package main

import (
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/metrics"
)

// TestDutiesFetchNothing: the duties' group member only holds partitions
// and offsets; the records reach the duties from the views. While
// documents go through their whole lifecycle (dispatch, worker, job
// outcome), it sends no Fetch request.
func TestDutiesFetchNothing(t *testing.T) {
	t.Parallel()
	reqs := metrics.New() // counts the duties member's requests only
	tn := setup(t, func(c *Config) { c.dutiesOpts = []kgo.Opt{kgo.WithHooks(reqs.KafkaHook())} })
	for i := range 4 {
		if _, code := tn.upload("no-fetch", "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	tn.processAndWait("no-fetch")
	if b := tn.waitBatch("no-fetch", func(batchView) bool { return true }); b.Status != "succeeded" || b.Counts["succeeded"] != 4 {
		t.Fatalf("batch = %+v", b)
	}
	// A job's outcome is the coordinator's duty.
	job := tn.startJob("/v1/documents/process", tn.uploadJobsDoc("job.txt", textInvoice(5)))
	tn.waitJob(job, func(j jobView) bool { return j.Status == "completed" })
	if n := reqs.KafkaRequests()["Fetch"]; n != 0 {
		t.Errorf("the duties member sent %d Fetch requests, want 0", n)
	}
	if reqs.KafkaRequests()["JoinGroup"] == 0 {
		t.Error("no JoinGroup request counted; is the hook installed?")
	}
}
