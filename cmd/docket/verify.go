package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// errViewsDiffer makes `docket verify` exit non-zero.
var errViewsDiffer = errors.New("views differ from a rebuild of the log")

// openLogOf connects to the deployment's log (see brokersOf).
func openLogOf(ctx context.Context, lf logFlags) (*eventstore.Store, func(), error) {
	stopBroker, err := brokersOf(&lf, false)
	if err != nil {
		return nil, nil, err
	}
	store, err := lf.open(ctx)
	if err != nil {
		stopBroker()
		return nil, nil, err
	}
	return store, func() { store.Close(); stopBroker() }, nil
}

// brokersOf fills in lf.brokers. Without --kafka-brokers it uses the
// embedded broker of --data-dir: the running node's (broker.addr) when one
// answers, or else a broker started here on the data dir's own log (on a
// free port), so that a stopped node can be read, replayed and verified.
// With create, a data dir without a log gets a new one (docket replay
// --generate). The returned stop closes what was started.
func brokersOf(lf *logFlags, create bool) (func(), error) {
	nothing := func() {}
	if lf.brokers != "" {
		return nothing, nil
	}
	b, err := os.ReadFile(filepath.Join(lf.dataDir, "broker.addr"))
	if addr := strings.TrimSpace(string(b)); err == nil && dialable(addr) {
		lf.brokers = addr
		return nothing, nil
	}
	logDir := filepath.Join(lf.dataDir, "kafka")
	if _, err := os.Stat(logDir); err != nil && !create {
		return nil, fmt.Errorf("no --kafka-brokers, no running node and no log in %s (%w)", lf.dataDir, err)
	}
	// Existing topics keep the partition count they have on disk; a new
	// log gets serve's default.
	emb, err := eventstore.StartEmbedded(logDir, "127.0.0.1:0", 12)
	if err != nil {
		return nil, err
	}
	lf.brokers = emb.Addr()
	return emb.Close, nil
}

func dialable(addr string) bool {
	if addr == "" {
		return false
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// verify implements `docket verify`: it rebuilds every view from offset 0
// up to the offsets the data dir's views reached, compares the rebuild with
// them key by key (DESIGN invariant 4) and fails listing the differing keys.
//
// It reads the views of a stopped node (Pebble locks the views of a running
// one; the error says so). A running node is verified in-process by the
// end-to-end suites; to verify a live deployment, point --views at a
// checkpoint or stop one API node briefly: the others keep serving.
func verify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.bind(fs)
	viewsDir := fs.String("views", "", "views directory to verify (default <data-dir>/views)")
	max := fs.Int("max-diffs", 100, "differences to print at most")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *viewsDir == "" {
		*viewsDir = filepath.Join(lf.dataDir, "views")
	}
	if _, err := os.Stat(*viewsDir); err != nil {
		return fmt.Errorf("verify: no views at %s: %w", *viewsDir, err)
	}
	live, err := projections.Open(*viewsDir)
	if err != nil {
		return fmt.Errorf("verify: %w (is the node still running? its views are locked while it runs: stop it, or verify a checkpoint with --views)", err)
	}
	defer live.Close()
	snap, err := live.Snapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	store, stop, err := openLogOf(ctx, lf)
	if err != nil {
		return err
	}
	defer stop()
	if err := live.CheckLog(store.EventsTopic(), store.EventsTopicID()); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	tmp, err := os.MkdirTemp("", "docket-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	rebuilt, err := projections.Rebuild(ctx, store, tmp, snap.Offsets)
	if err != nil {
		return err
	}
	defer rebuilt.Close()
	diff, err := projections.Diff(snap, rebuilt, *max)
	if err != nil {
		return err
	}
	events := total(snap.Offsets)
	if len(diff) > 0 {
		fmt.Fprintf(stdout, "%d or more differences between %s (first) and a rebuild of %d events (second):\n%s\n",
			len(diff), *viewsDir, events, strings.Join(diff, "\n"))
		return errViewsDiffer
	}
	fmt.Fprintf(stdout, "ok: %s equals a rebuild of %d events from offset 0 (%d partitions, %s)\n",
		*viewsDir, events, len(snap.Offsets), time.Since(start).Round(time.Millisecond))
	return nil
}
