package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConfluentMigration moves a running deployment from the single-object
// encoding to the Confluent wire format: a node writes a batch without a
// registry, restarts with --schema-registry-url and writes another; the
// topic then holds both encodings, the views equal a rebuild, and `docket
// events` with the registry decodes every record. Needs a real registry
// (DOCKET_TEST_SCHEMA_REGISTRY; scripts/registry.sh).
func TestConfluentMigration(t *testing.T) {
	t.Parallel()
	url := os.Getenv("DOCKET_TEST_SCHEMA_REGISTRY")
	if url == "" {
		t.Skip("DOCKET_TEST_SCHEMA_REGISTRY is not set: no schema registry (scripts/registry.sh)")
	}
	tn := setup(t)
	tn.processed("before", "inv-quickfix-it-usd.txt")
	tn.stop()
	tn.cfg.SchemaRegistryURL = url
	tn.start()
	tn.processed("after", "inv-datasync-cloud-usd.csv")
	tn.verify()

	encodings := map[byte]int{}
	for _, r := range rawValues(t, tn) {
		encodings[r[0]]++
	}
	if encodings[0xC3] == 0 || encodings[0x00] == 0 || len(encodings) != 2 {
		t.Fatalf("first bytes on the topic: %v, want both C3 (single-object) and 00 (Confluent)", encodings)
	}
	out, err := tn.cli("events", "--schema-registry-url", url)
	if err != nil {
		t.Fatal(err)
	}
	lines := parseLines(t, out)
	if n := encodings[0xC3] + encodings[0x00]; len(lines) != n {
		t.Fatalf("docket events printed %d lines for %d records", len(lines), n)
	}
	for _, l := range lines {
		if l.Error != "" {
			t.Fatalf("undecodable record: %+v", l)
		}
	}
	// Without the registry the Confluent records are reported, not misread.
	out, err = tn.cli("events")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, `"error":`); n != encodings[0x00] {
		t.Errorf("without the registry %d records are reported undecodable, want %d", n, encodings[0x00])
	}
}

// rawValues returns the raw values of every record of tn's event topic.
func rawValues(t *testing.T, tn *testNode) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end, err := tn.n.store.EndOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[int32]kgo.Offset{}
	left := 0
	for p, o := range end {
		if o > 0 {
			parts[p] = kgo.NewOffset().At(0)
			left++
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.n.store.Seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tn.n.store.EventsTopic(): parts}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out [][]byte
	for left > 0 {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read the topic: %v", ctx.Err())
		}
		f.EachRecord(func(r *kgo.Record) {
			out = append(out, r.Value)
			if r.Offset == end[r.Partition]-1 {
				left--
			}
		})
	}
	return out
}
