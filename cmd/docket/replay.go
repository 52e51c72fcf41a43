package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// replay implements `docket replay --into DIR`: every projection rebuilt
// from offset 0 into a fresh Pebble directory, up to the end of the log as
// it was at start, timed. With --compare-raw it then consumes the same
// records with a bare franz-go client (no decoding, no folding) so the cost
// of the projections can be told from the cost of reading the log.
func replay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.bind(fs)
	into := fs.String("into", "", "fresh directory for the rebuilt views (must not exist or be empty)")
	raw := fs.Bool("compare-raw", false, "also time a raw consume of the same records")
	generate := fs.Int("generate", 0, "first append this many synthetic events (a realistic mix; use a --topic-prefix of its own)")
	genOrgs := fs.Int("generate-orgs", 64, "organisations the synthetic events spread over")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the replay to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *into == "" {
		return usageError("docket replay --into DIR [--compare-raw] [--generate N] [--kafka-brokers ...|--data-dir ...] [--topic-prefix ...]")
	}
	if entries, err := os.ReadDir(*into); err == nil && len(entries) > 0 {
		return fmt.Errorf("replay: %s is not empty: replay builds fresh views", *into)
	}
	if *generate > 0 {
		// The generated log needs a broker: the deployment's, or one on the
		// data dir that then also serves the replay below.
		stopBroker, err := brokersOf(&lf, true)
		if err != nil {
			return err
		}
		defer stopBroker()
		if err := generateEvents(ctx, lf, *generate, *genOrgs, stdout); err != nil {
			return err
		}
	}
	store, stop, err := openLogOf(ctx, lf)
	if err != nil {
		return err
	}
	defer stop()
	end, err := store.EndOffsets(ctx)
	if err != nil {
		return err
	}
	events := total(end)
	stopProfile, err := startCPUProfile(*profile)
	if err != nil {
		return err
	}
	start := time.Now()
	v, err := projections.Rebuild(ctx, store, *into, end)
	took := time.Since(start)
	stopProfile()
	if err != nil {
		return err
	}
	noops := v.Noops()
	if err := v.Close(); err != nil {
		return err
	}
	// Refused events are normal in a real log (a duplicate claim, a late
	// result of a fenced worker) but a generated mix should have none.
	fmt.Fprintf(stdout, "replayed %d events from %d partitions into %s in %s: %.0f events/s, %d refused by the folds\n",
		events, len(end), *into, took.Round(time.Millisecond), float64(events)/took.Seconds(), noops)
	if !*raw {
		return nil
	}
	n, rawTook, err := consumeRaw(ctx, store, end)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "raw consume of the same %d records in %s: %.0f records/s (replay runs at %.0f %% of it)\n",
		n, rawTook.Round(time.Millisecond), float64(n)/rawTook.Seconds(), 100*rawTook.Seconds()/took.Seconds())
	return nil
}

// consumeRaw reads every record below end with a plain franz-go client,
// touching nothing but the record count: the floor replay cannot beat.
func consumeRaw(ctx context.Context, store *eventstore.Store, end map[int32]int64) (int64, time.Duration, error) {
	parts := map[int32]kgo.Offset{}
	for p, o := range end {
		if o > 0 {
			parts[p] = kgo.NewOffset().At(0)
		}
	}
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(store.Seeds()...), kgo.ClientID("docket-replay-raw"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{store.EventsTopic(): parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(250*time.Millisecond))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	var n int64
	left := len(parts)
	next := map[int32]int64{}
	for left > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		if errs := fetches.Errors(); len(errs) > 0 && fetches.NumRecords() == 0 {
			return 0, 0, errors.Join(errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			n++
			next[r.Partition] = r.Offset + 1
			if next[r.Partition] == end[r.Partition] {
				left--
			}
		})
	}
	return n, time.Since(start), nil
}
