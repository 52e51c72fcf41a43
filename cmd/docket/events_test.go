package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// cli runs the docket command line in-process against tn's log and returns
// what it printed.
func (tn *testNode) cli(args ...string) (string, error) {
	tn.t.Helper()
	out, _, err := tn.cliStderr(args...)
	return out, err
}

// cliStderr is cli, with what the command wrote to stderr.
func (tn *testNode) cliStderr(args ...string) (stdout, stderr string, err error) {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	// The test's own flags come last, so they win over the defaults.
	full := append(append([]string{args[0]}, tn.logArgs()...), args[1:]...)
	err = run(ctx, full, &out, &errOut)
	if errOut.Len() > 0 {
		tn.t.Logf("docket %s: stderr: %s", args[0], errOut.String())
	}
	return out.String(), errOut.String(), err
}

// logArgs point a log-reading command at tn's deployment: its brokers while
// it runs (or the external cluster), else its data dir.
func (tn *testNode) logArgs() []string {
	args := []string{"--topic-prefix", tn.cfg.TopicPrefix, "--data-dir", tn.cfg.DataDir}
	if tn.n != nil {
		return append(args, "--kafka-brokers", strings.Join(tn.n.store.Seeds(), ","))
	}
	if tn.cfg.KafkaBrokers != "" {
		return append(args, "--kafka-brokers", tn.cfg.KafkaBrokers)
	}
	return args
}

func parseLines(t *testing.T, out string) []eventLine {
	t.Helper()
	var lines []eventLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var e eventLine
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, e)
	}
	return lines
}

func types(lines []eventLine) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Type)
	}
	return out
}

// processed uploads a document into batch and waits until it is done.
func (tn *testNode) processed(batch, file string) string {
	tn.t.Helper()
	data, _ := corpus(tn.t, file)
	d, code := tn.upload(batch, file, data, "ref-"+batch)
	if code != http.StatusCreated {
		tn.t.Fatalf("upload: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/"+batch+"/process", nil, "", nil, nil); code != http.StatusAccepted {
		tn.t.Fatalf("process: %d", code)
	}
	tn.waitBatch(batch, func(b batchView) bool { return b.AllDone })
	return d.ID
}

func TestEventsCommand(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	docA := tn.processed("alpha", "inv-quickfix-it-usd.txt")
	docB := tn.processed("beta", "inv-datasync-cloud-usd.csv")

	out, err := tn.cli("events")
	if err != nil {
		t.Fatal(err)
	}
	all := parseLines(t, out)
	if got := strings.Join(types(all[:2]), ","); got != "OrgCreated,ApiKeyIssued" {
		t.Fatalf("log starts with %s", got)
	}
	var sawItems bool
	for _, l := range all {
		if l.Error != "" || l.Meta == nil || l.Meta.OrgID != "org_default" || l.Meta.EventID == "" {
			t.Fatalf("bad line %+v", l)
		}
		if l.Type == "DocumentSucceeded" && l.Payload["document_id"] == docA {
			items, _ := l.Payload["line_items"].([]any)
			sawItems = len(items) > 0 && items[0].(map[string]any)["description"] != ""
		}
	}
	if !sawItems {
		t.Error("the DocumentSucceeded of the first document shows no line items")
	}

	// Filters: each result is checked against the unfiltered listing.
	byDoc := func(doc string) []string {
		var want []string
		for _, l := range all {
			if l.Payload["document_id"] == doc {
				want = append(want, l.Type)
			}
		}
		return want
	}
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"batch":       {[]string{"--batch", "beta"}, byDoc(docB)},
		"document":    {[]string{"--document", docA}, byDoc(docA)},
		"type":        {[]string{"--type", "OrgCreated,ApiKeyIssued"}, []string{"OrgCreated", "ApiKeyIssued"}},
		"batch+type":  {[]string{"--batch", "alpha", "--type", "DocumentSucceeded"}, []string{"DocumentSucceeded"}},
		"org by name": {[]string{"--org", "default", "--type", "OrgCreated"}, []string{"OrgCreated"}},
		"other org":   {[]string{"--org", "nobody"}, nil},
		"future":      {[]string{"--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, nil},
		"past":        {[]string{"--until", "2001-01-01T00:00:00Z"}, nil},
	} {
		out, err := tn.cli(append([]string{"events"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := types(parseLines(t, out)); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: got %v, want %v", name, got, tc.want)
		}
	}
	// --job: the job's own events and those of the documents it covers.
	jobDoc := tn.uploadJobsDoc("j.txt", textInvoice(7))
	job := tn.startJob("/v1/documents/process", jobDoc)
	tn.waitJob(job, func(j jobView) bool { return j.Status == "completed" })
	out, err = tn.cli("events", "--job", job)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range parseLines(t, out) {
		got[l.Type] = true
		if d := l.Payload["document_id"]; d != nil && d != jobDoc {
			t.Errorf("--job printed an event of document %v", d)
		}
	}
	for _, want := range []string{"JobCreated", "DocumentQueued", "ProcessingStarted", "DocumentPreprocessed", "JobCompleted"} {
		if !got[want] {
			t.Errorf("--job %s printed no %s (got %v)", job, want, got)
		}
	}
	if got["DocumentUploaded"] {
		t.Error("--job printed the upload, which happened before the job existed")
	}
	if _, err := tn.cli("events", "--type", "NoSuchEvent"); err == nil {
		t.Error("an unknown --type is accepted")
	}
	if _, err := tn.cli("events", "--topic-prefix", "no-such-prefix"); err == nil {
		t.Error("a prefix without topics is accepted")
	}
}

// TestEventsFollow tails the log: an event appended after the command
// started is printed, and cancelling ends the command without error.
func TestEventsFollow(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"events", "--follow", "--type", "DocumentUploaded"}, tn.logArgs()...), pw, io.Discard)
		pw.Close()
		done <- err
	}()
	data, _ := corpus(t, "inv-quickfix-it-usd.txt")
	d, code := tn.upload("tail", "a.txt", data, "")
	if code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("--follow printed nothing: %v", sc.Err())
	}
	l := parseLines(t, sc.Text())
	if len(l) != 1 || l[0].Type != "DocumentUploaded" || l[0].Payload["document_id"] != d.ID {
		t.Fatalf("followed line %q", sc.Text())
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := <-done; err != nil {
		t.Fatalf("--follow ended with %v", err)
	}
}
