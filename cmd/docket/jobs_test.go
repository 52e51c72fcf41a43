package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

type jobView struct {
	JobID    string `json:"jobId"`
	Type     string `json:"type"`
	Status   string `json:"status"`
	Progress *struct {
		Done, Total, Failed int
	} `json:"progress"`
	Result struct {
		Documents []struct {
			DocumentID string `json:"documentId"`
			Status     string `json:"status"`
			Error      *struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"documents"`
		Results *struct {
			SessionID string `json:"sessionId"`
		} `json:"results"`
	} `json:"result"`
	Duration *float64 `json:"duration"`
	FileName string   `json:"fileName"`
	NumPages *int     `json:"numPages"`
}

func (tn *testNode) uploadJobsDoc(name string, content []byte) string {
	tn.t.Helper()
	body, ct := multipartBody(tn.t, name, content, "")
	var out struct {
		DocumentID string `json:"documentId"`
	}
	if code := tn.do("POST", "/v1/documents", body, ct, nil, &out); code != http.StatusCreated || out.DocumentID == "" {
		tn.t.Fatalf("POST /v1/documents: %d %+v", code, out)
	}
	return out.DocumentID
}

func (tn *testNode) postJSON(path string, v any, out any) int {
	tn.t.Helper()
	b, _ := json.Marshal(v)
	return tn.do("POST", path, bytes.NewReader(b), "application/json", nil, out)
}

func (tn *testNode) waitJob(id string, cond func(jobView) bool) jobView {
	tn.t.Helper()
	var j jobView
	tn.waitFor(func() bool {
		j = jobView{}
		return tn.get("/v1/jobs/"+id, &j) == http.StatusOK && cond(j)
	})
	return j
}

// TestPreprocessJob: a batch preprocess job over a good and a corrupt
// document ends completed_with_failures with one failed row carrying its
// error; force reprocessing reopens it and completes it again.
func TestPreprocessJob(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	good := tn.uploadJobsDoc("a.txt", textInvoice(1))
	data, _ := corpus(t, "inv-pacific-usd-truncated.pdf")
	bad := tn.uploadJobsDoc("bad.pdf", data)
	var created struct {
		JobID string `json:"jobId"`
	}
	if code := tn.postJSON("/v1/documents/process", map[string]any{"documentIds": []string{good, bad}}, &created); code != http.StatusAccepted || created.JobID == "" {
		t.Fatalf("process: %d %+v", code, created)
	}
	j := tn.waitJob(created.JobID, func(j jobView) bool { return j.Status == "completed_with_failures" })
	if j.Progress == nil || j.Progress.Done != 2 || j.Progress.Failed != 1 || j.Duration == nil || j.Type != "preprocess" {
		t.Fatalf("job = %+v", j)
	}
	for _, row := range j.Result.Documents {
		if row.DocumentID == bad && (row.Status != "failed" || row.Error == nil || row.Error.Code != "corrupt_document") {
			t.Fatalf("bad row = %+v", row)
		}
		if row.DocumentID == good && (row.Status != "completed" || row.Error != nil) {
			t.Fatalf("good row = %+v", row)
		}
	}
	// Force: the finished job reopens and completes again.
	var again struct {
		JobID string `json:"jobId"`
	}
	if code := tn.postJSON("/v1/documents/process", map[string]any{"documentIds": []string{good}, "force": true}, &again); code != http.StatusAccepted {
		t.Fatalf("force: %d", code)
	}
	tn.waitJob(again.JobID, func(j jobView) bool { return j.Status == "completed" })
	j = tn.waitJob(created.JobID, func(j jobView) bool { return j.Status == "completed_with_failures" })
	reopened := false
	for _, rec := range tn.orgLog() {
		if rec.Event.Type() == "JobReopened" {
			reopened = true
		}
	}
	if !reopened {
		t.Fatal("force reprocess did not reopen the finished job")
	}
	tn.verify()
}

// TestExtractionSession: an extraction session preprocesses where needed,
// extracts, completes with a results session id whose results carry the
// line items.
func TestExtractionSession(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	doc := tn.uploadJobsDoc("a.txt", textInvoice(2))
	var created struct {
		JobID     string `json:"jobId"`
		SessionID string `json:"sessionId"`
	}
	if code := tn.postJSON("/v1/extraction-sessions", map[string]any{"documentIds": []string{doc}}, &created); code != http.StatusAccepted || created.SessionID == "" {
		t.Fatalf("session: %d %+v", code, created)
	}
	j := tn.waitJob(created.JobID, func(j jobView) bool { return j.Status == "completed" })
	if j.Result.Results == nil || j.Type != "extraction" || j.Result.Documents[0].Error != nil {
		t.Fatalf("job = %+v", j)
	}
	var res struct {
		Documents []struct {
			DocumentID string     `json:"documentId"`
			LineItems  []lineItem `json:"lineItems"`
		} `json:"documents"`
	}
	if code := tn.get("/v1/extraction-sessions/"+created.SessionID+"/results", &res); code != http.StatusOK || len(res.Documents) != 1 || len(res.Documents[0].LineItems) != 2 {
		t.Fatalf("results: %d %+v", code, res)
	}
	tn.verify()
}

// TestHandleSecurity: forged, truncated and unknown handles all answer one
// identical 404.
func TestHandleSecurity(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	doc := tn.uploadJobsDoc("a.txt", textInvoice(3))
	var created struct {
		JobID string `json:"jobId"`
	}
	tn.postJSON("/v1/documents/process", map[string]any{"documentIds": []string{doc}}, &created)
	var want errorView
	if code := tn.get("/v1/jobs/job_AAAA", &want); code != http.StatusNotFound {
		t.Fatalf("unknown handle: %d", code)
	}
	id := created.JobID
	for i := 4; i < len(id); i++ {
		flipped := []byte(id)
		flipped[i] ^= 0x01
		var got errorView
		code := tn.get("/v1/jobs/"+string(flipped), &got)
		if code != http.StatusNotFound || got.Error.Code != want.Error.Code || got.Error.Message != want.Error.Message {
			t.Fatalf("flipped at %d: %d %+v", i, code, got)
		}
	}
	var got errorView
	if code := tn.get("/v1/jobs/"+id[:len(id)-3], &got); code != http.StatusNotFound || got.Error.Message != want.Error.Message {
		t.Fatalf("truncated: %d %+v", code, got)
	}
}

// TestJobOverDeletedBatchDocument: a document whose batch was deleted can
// never run again; a job over it does not hang but ends with the row
// cancelled.
func TestJobOverDeletedBatchDocument(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	tn := setup(t, func(c *Config) { c.holdWorker = hold })
	defer close(hold)
	d, code := tn.upload("gone", "a.txt", textInvoice(1), "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	if code := tn.do("DELETE", "/v1/batches/gone", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("delete: %d", code)
	}
	for _, force := range []bool{false, true} {
		var created struct {
			JobID string `json:"jobId"`
		}
		if code := tn.postJSON("/v1/documents/process", map[string]any{"documentIds": []string{d.ID}, "force": force}, &created); code != http.StatusAccepted {
			t.Fatalf("process: %d", code)
		}
		j := tn.waitJob(created.JobID, func(j jobView) bool { return j.Status == "completed_with_failures" })
		if j.Result.Documents[0].Status != "cancelled" {
			t.Fatalf("force=%v: row = %+v", force, j.Result.Documents[0])
		}
	}
}
