package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// outsideTools finds kcat and the Python with fastavro that .ci/run
// installs (python3 -m venv .cache/pyvenv; pip install -r
// scripts/consumer/requirements.txt). Without them the test is skipped,
// saying so, except in CI, where it must run.
func outsideTools(t *testing.T) (kcat, python string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; .ci/run installs it", what)
		}
		t.Skipf("%s is missing (apt-get install kcat; python3 -m venv .cache/pyvenv && .cache/pyvenv/bin/pip install -r scripts/consumer/requirements.txt)", what)
	}
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		missing("kcat")
	}
	python = os.Getenv("DOCKET_TEST_PYTHON")
	if python == "" {
		python, _ = filepath.Abs(filepath.Join("..", "..", ".cache", "pyvenv", "bin", "python"))
	}
	if _, err := os.Stat(python); err != nil {
		missing("the Python venv with fastavro (" + python + ")")
	}
	return kcat, python
}

// TestOutsideConsumer drives a real node until the log holds every event
// type of domain.Catalogue(), then reads the raw records with kcat (not our
// Kafka client) and decodes them with Python's fastavro from the files in
// schemas/ alone; every decoded record must equal what Go wrote.
func TestOutsideConsumer(t *testing.T) {
	t.Parallel()
	kcat, python := outsideTools(t)
	hold := make(chan struct{})
	tn := setup(t, func(c *Config) {
		c.holdWorker, c.WebhookAllowLoopback, c.WebhookSchedule = hold, true, "0s,20ms"
	})
	produceEveryEventType(t, tn, hold)
	recs := waitAllTypes(t, tn)

	out := runOutside(t, tn, kcat, python)
	decoded := map[eventstore.Position]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d struct {
			Partition  int32          `json:"partition"`
			Offset     int64          `json:"offset"`
			Key        string         `json:"key"`
			TypeHeader string         `json:"type_header"`
			Type       string         `json:"type"`
			Record     map[string]any `json:"record"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("decoder output %q: %v", line, err)
		}
		d.Record["_type"], d.Record["_header"], d.Record["_key"] = d.Type, d.TypeHeader, d.Key
		decoded[eventstore.Position{Partition: d.Partition, Offset: d.Offset}] = d.Record
	}
	if len(decoded) < len(recs) {
		t.Fatalf("python decoded %d records, Go wrote %d", len(decoded), len(recs))
	}
	for _, rec := range recs {
		want := avroJSON(t, rec.Event)
		want["_type"], want["_header"], want["_key"] = rec.Event.Type(), rec.Event.Type(), rec.Event.Header().OrgID
		if got := decoded[rec.Position]; !reflect.DeepEqual(got, want) {
			t.Errorf("%d/%d %s: python decoded\n%v\nGo wrote\n%v", rec.Partition, rec.Offset, rec.Event.Type(), got, want)
		}
	}
	// This log holds every event type: a rebuild must equal the live views.
	tn.verify()
}

// runOutside pipes kcat's raw records into the Python decoder.
func runOutside(t *testing.T, tn *testNode, kcat, python string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	read := exec.CommandContext(ctx, kcat, "-C", "-b", strings.Join(tn.n.store.Seeds(), ","), "-t", tn.n.store.EventsTopic(),
		"-e", "-q", "-f", `%p %o %K %S %h\n%k%s`)
	raw, err := read.Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	var out, errOut bytes.Buffer
	dec := exec.CommandContext(ctx, python, filepath.Join("..", "..", "scripts", "consumer", "decode.py"), filepath.Join("..", "..", "schemas"))
	dec.Stdin, dec.Stdout, dec.Stderr = bytes.NewReader(raw), &out, &errOut
	if err := dec.Run(); err != nil {
		t.Fatalf("decode.py: %v\n%s", err, errOut.String())
	}
	t.Logf("kcat read %d bytes; %s", len(raw), strings.TrimSpace(errOut.String()))
	return out.String()
}

// avroJSON is what an Avro decoder in another language reports for ev,
// after a JSON round trip: fields by schema name, bytes as base64,
// timestamps as epoch microseconds, empty arrays as [].
func avroJSON(t *testing.T, ev domain.Event) map[string]any {
	t.Helper()
	b, err := json.Marshal(avroValue(reflect.ValueOf(ev)))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func avroValue(v reflect.Value) any {
	switch {
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return avroValue(v.Elem())
	case v.Type() == reflect.TypeFor[time.Time]():
		return v.Interface().(time.Time).UnixMicro()
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case v.Kind() == reflect.Slice:
		out := []any{}
		for i := range v.Len() {
			out = append(out, avroValue(v.Index(i)))
		}
		return out
	case v.Kind() == reflect.Struct:
		out := map[string]any{}
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("avro"), ",")
			out[name] = avroValue(v.Field(i))
		}
		return out
	}
	return v.Interface()
}

// waitAllTypes reads the whole log until it holds every catalogue type
// (some are appended by duties after the request that caused them).
func waitAllTypes(t *testing.T, tn *testNode) []eventstore.Record {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		recs := readAllLog(t, tn.n.store)
		seen := map[string]bool{}
		for _, r := range recs {
			if r.Err != nil {
				t.Fatalf("undecodable record %d/%d: %v", r.Partition, r.Offset, r.Err)
			}
			seen[r.Event.Type()] = true
		}
		var missing []string
		for _, ev := range domain.Catalogue() {
			if !seen[ev.Type()] {
				missing = append(missing, ev.Type())
			}
		}
		if len(missing) == 0 {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never held %v", missing)
		}
		tn.waitApplied()
	}
}

// readAllLog reads every partition of the event topic up to its end.
func readAllLog(t *testing.T, s *eventstore.Store) []eventstore.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []eventstore.Record
	err := scanLog(ctx, s, "", false, io.Discard, func(r eventstore.Record) error { out = append(out, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// processAndWait is POST /process on a batch, then all_done.
func (tn *testNode) processAndWait(batch string) {
	tn.t.Helper()
	if code := tn.do("POST", "/v1/batches/"+batch+"/process", nil, "", nil, nil); code != http.StatusAccepted {
		tn.t.Fatalf("process %s: %d", batch, code)
	}
	tn.waitBatch(batch, func(b batchView) bool { return b.AllDone })
}

func mustCode(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %d, want %d", what, got, want)
	}
}

// jsonBody is a JSON request body.
func jsonBody(v any) *bytes.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}
