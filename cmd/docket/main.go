// Command docket is the one binary of the docket service.
//
//	docket serve           run a node (API, views, duties, worker; embedded broker by default)
//	docket orgs create N   create an organisation and print its API key
//	docket bench           drive the full lifecycle and print throughput and latency
//	docket health          probe a node's /readyz (for container health checks)
//	docket events          print the event log as JSON lines (filters, --follow)
//	docket replay          rebuild every view from offset 0 into a fresh directory, timed
//	docket verify          compare a stopped node's views with a rebuild of the log
//	docket extract FILE    print a document's line items as JSON (exit 1 with an error object)
//	docket eval DIR        score extraction over DIR's *.expected.json (the corpus rule)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var st exitStatus
		if errors.As(err, &st) {
			os.Exit(int(st))
		}
		fmt.Fprintln(os.Stderr, "docket:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("docket serve|orgs|bench|health|events|replay|verify|copy-log|extract|eval [flags]")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "orgs":
		return orgs(ctx, args[1:], stdout, stderr)
	case "bench":
		return bench(ctx, args[1:], stdout, stderr)
	case "health":
		return health(ctx, args[1:], stdout, stderr)
	case "events":
		return events(ctx, args[1:], stdout, stderr)
	case "replay":
		return replay(ctx, args[1:], stdout, stderr)
	case "verify":
		return verify(ctx, args[1:], stdout, stderr)
	case "copy-log":
		return copyLog(ctx, args[1:], stdout, stderr)
	case "extract":
		return runExtract(ctx, args[1:], stdout, stderr)
	case "eval":
		return runEval(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, "usage: docket serve|orgs create|issue-key|revoke-key NAME|bench|health|events|replay|verify|copy-log|extract FILE|eval DIR [flags]; docket CMD -h for flags")
		return nil
	}
	return usageError("unknown command %q", args[0])
}

func newLogger(format, level string, w io.Writer) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// The process's, not the node's: tests run many nodes in one process.
	tuneGC(cfg.GCPercent, cfg.MemoryLimit)
	log := newLogger(cfg.LogFormat, cfg.LogLevel, stderr)
	n, err := startNode(ctx, cfg, log)
	if err != nil {
		return err
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info().Msg("shutting down")
			n.close()
			return nil
		case <-ticker.C:
			if err := n.failed(); err != nil {
				n.close()
				return errors.Join(errors.New("a component failed"), err)
			}
		}
	}
}
