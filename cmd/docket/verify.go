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

// openLogOf connects to the deployment's log. Without --kafka-brokers it
// uses the embedded broker of --data-dir: the running node's (broker.addr)
// when one answers, or else the broker started here on the data dir's own
// log, so a stopped node can be replayed and verified. The returned stop
// closes what was started.
func openLogOf(ctx context.Context, lf logFlags) (*eventstore.Store, func(), error) {
	if lf.brokers == "" {
		b, err := os.ReadFile(filepath.Join(lf.dataDir, "broker.addr"))
		addr := strings.TrimSpace(string(b))
		if err == nil && dialable(addr) {
			lf.brokers = addr
		} else if _, statErr := os.Stat(filepath.Join(lf.dataDir, "kafka")); statErr == nil {
			// The node is stopped: serve its log ourselves, on a free port,
			// with the partition count it already has on disk.
			emb, err := eventstore.StartEmbedded(filepath.Join(lf.dataDir, "kafka"), "127.0.0.1:0", 1)
			if err != nil {
				return nil, nil, err
			}
			lf.brokers = emb.Addr()
			store, err := lf.open(ctx)
			if err != nil {
				emb.Close()
				return nil, nil, err
			}
			return store, func() { store.Close(); emb.Close() }, nil
		}
	}
	store, err := lf.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	return store, store.Close, nil
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
	var events int64
	for _, o := range snap.Offsets {
		events += o
	}
	if len(diff) > 0 {
		fmt.Fprintf(stdout, "%d or more differences between %s (first) and a rebuild of %d events (second):\n%s\n",
			len(diff), *viewsDir, events, strings.Join(diff, "\n"))
		return errViewsDiffer
	}
	fmt.Fprintf(stdout, "ok: %s equals a rebuild of %d events from offset 0 (%d partitions, %s)\n",
		*viewsDir, events, len(snap.Offsets), time.Since(start).Round(time.Millisecond))
	return nil
}
