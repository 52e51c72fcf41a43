package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

var replayedRe = regexp.MustCompile(`replayed (\d+) events .*: (\d+) events/s, (\d+) refused by the folds`)

// TestVerifyCommand runs `docket verify` on the data dir a node left behind:
// equal views pass; a view key changed behind the log's back fails, naming
// the key. A running node's views are refused with a clear error.
func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	tn.processed("v1", "inv-quickfix-it-usd.txt")
	tn.processed("v2", "inv-koenig-buero-eur.csv")
	if _, err := tn.cli("verify"); err == nil || !strings.Contains(err.Error(), "running") {
		t.Fatalf("verify of a running node's views: %v, want the locked-views error", err)
	}
	tn.stop()
	out, err := tn.cli("verify")
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("verify printed %q", out)
	}

	db, err := pebble.Open(filepath.Join(tn.cfg.DataDir, "views"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("zz-tampered"), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	out, err = tn.cli("verify")
	if !errors.Is(err, errViewsDiffer) {
		t.Fatalf("verify of tampered views: %v", err)
	}
	if !strings.Contains(out, `"zz-tampered"`) {
		t.Fatalf("verify did not name the differing key:\n%s", out)
	}
}

// TestReplayCommand rebuilds a node's views with `docket replay` and checks
// the rebuild counts every event; then generates a synthetic log and checks
// every generated event is accepted by the folds (the mix is valid).
func TestReplayCommand(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	tn.processed("r1", "inv-quickfix-it-usd.txt")
	end, err := tn.n.store.EndOffsets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, o := range end {
		total += o
	}
	tn.stop()
	out, err := tn.cli("replay", "--into", filepath.Join(t.TempDir(), "views"), "--compare-raw")
	if err != nil {
		t.Fatal(err)
	}
	m := replayedRe.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.FormatInt(total, 10) {
		t.Fatalf("replay printed %q, want %d events", out, total)
	}
	if !strings.Contains(out, fmt.Sprintf("raw consume of the same %d records", total)) {
		t.Fatalf("no raw comparison in %q", out)
	}
	if _, err := tn.cli("replay", "--into", tn.cfg.DataDir); err == nil {
		t.Error("replay into a non-empty directory is accepted")
	}
}

func TestReplayGenerated(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	// A topic prefix of its own, as the README says: under the node's own
	// prefix, its duties and worker would claim generated documents too,
	// racing the generator's claims (CI saw 2 refused on Apache Kafka).
	prefix := tn.cfg.TopicPrefix + "-gen"
	out, err := tn.cli("replay", "--into", filepath.Join(t.TempDir(), "views"), "--generate", "3000", "--generate-orgs", "7", "--topic-prefix", prefix)
	if err != nil {
		t.Fatal(err)
	}
	m := replayedRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("replay printed %q", out)
	}
	if n, _ := strconv.Atoi(m[1]); n < 3000 {
		t.Errorf("replayed %d events, generated at least 3000", n)
	}
	if m[3] != "0" {
		t.Errorf("the folds refused %s generated events: the mix is not a valid history", m[3])
	}
}
