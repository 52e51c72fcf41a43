package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestRolesSplitAcrossNodes runs the API, views and duties on one node and
// the worker alone on another (no HTTP, no Pebble), sharing the broker and
// the blob directory: documents uploaded to the first are processed by the
// second.
func TestRolesSplitAcrossNodes(t *testing.T) {
	t.Parallel()
	blobs := t.TempDir()
	api := setup(t, func(c *Config) { c.Roles, c.BlobDir = "api,projections,duties", blobs })

	w, wcfg := startWorker(t, api)
	if w.views != nil || w.http != nil {
		t.Fatal("a worker-only node opened views or HTTP")
	}
	if _, err := os.Stat(filepath.Join(wcfg.DataDir, "views")); !os.IsNotExist(err) {
		t.Fatalf("a worker-only node created a views directory: %v", err)
	}

	for i := range 3 {
		if _, code := api.upload("split", "inv.txt", textInvoice(i), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d", code)
		}
	}
	if code := api.do("POST", "/v1/batches/split/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	b := api.waitBatch("split", func(b batchView) bool { return b.AllDone })
	if b.Counts["succeeded"] != 3 {
		t.Fatalf("batch = %+v", b)
	}
	// The worker counts a result as appended when it has its ack, which can
	// reach it after the views applied the result; it commits the work item
	// only after that, so a drained work topic means the counts are in.
	api.waitWorkDrained()
	// The worker-only node is scraped on --metrics-listen.
	checkWorkerMetrics(t, "http://"+w.metricsAddr+"/metrics", 3)
}

// startWorker starts a worker-only node on api's broker and blob
// directory, closed when the test ends; its metrics are served on a port
// of their own.
func startWorker(t *testing.T, api *testNode) (*node, Config) {
	t.Helper()
	wcfg := api.cfg
	wcfg.Roles, wcfg.DataDir, wcfg.Listen = "worker", t.TempDir(), "127.0.0.1:0"
	wcfg.KafkaBrokers = strings.Join(api.n.store.Seeds(), ",")
	wcfg.MetricsListen = "127.0.0.1:0"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := startNode(ctx, wcfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	return w, wcfg
}

func TestRolesValidation(t *testing.T) {
	t.Parallel()
	for roles, ok := range map[string]bool{
		"api,projections,duties,worker": true,
		"worker":                        true,
		"projections":                   true,
		"api":                           false, // the API reads views
		"duties,worker":                 false, // the dispatcher reads views
		"api,projections,cook":          false,
	} {
		c := Config{Roles: roles}
		if err := c.validateRoles(); (err == nil) != ok {
			t.Errorf("roles %q: err = %v, want ok=%v", roles, err, ok)
		}
	}
}
