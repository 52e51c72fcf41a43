package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// errCopyRefused: copy-log found the source or the target not fit to copy.
var errCopyRefused = errors.New("copy-log refused")

// copyLog implements `docket copy-log`: the event log of one prefix copied
// into a new prefix whose topics have another partition count, which is
// how a deployment moves onto more partitions (partitions added to the
// topic in place are never used: eventstore's layout.go). Each org's
// events stay in order, since they come from one source partition read in
// order and go to the one target partition their org hashes to; records
// keep their key, value, headers and timestamp.
//
// The deployment must be stopped: events appended during the copy would be
// missing from it, and a document a worker holds has its result appended
// to the old log. The copy checks both (and that the deployment's Kafka
// groups have no members), and refuses a target log that is not empty and
// a source log that lost events to a retention.
func copyLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("copy-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.bind(fs)
	to := fs.String("to-prefix", "", "topic prefix of the new log (its topics are created)")
	partitions := fs.Int("to-partitions", 0, "partitions of the new log's event and work topics")
	replication := fs.Int("replication-factor", -1, "replication factor of the new topics (-1: the brokers' default)")
	minISR := fs.Int("min-insync-replicas", 0, "min.insync.replicas of the new topics (0: the brokers' default)")
	maxRecord := fs.Int("max-record-bytes", eventstore.DefaultMaxRecordBytes, "max.message.bytes of the new topics")
	wait := fs.Duration("wait", 15*time.Second, "how long stopped nodes may take to leave the deployment's Kafka groups (a stopped node's static membership lasts its 10 s session)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || *partitions < 1 || *to == lf.prefix {
		return usageError("docket copy-log --to-prefix NEW --to-partitions N [--topic-prefix OLD] [--kafka-brokers ...|--data-dir ...]; NEW must differ from OLD")
	}
	src, stop, err := openLogOf(ctx, lf)
	if err != nil {
		return err
	}
	defer stop()
	if err := checkStopped(ctx, src, *wait); err != nil {
		return err
	}
	checking := time.Now()
	end, err := checkSource(ctx, src)
	if err != nil {
		return err
	}
	checked := time.Since(checking)
	// The copies keep their records' timestamps, from which franz-go
	// would count the store's delivery timeout: they would fail at once.
	dst, err := eventstore.Open(ctx, src.Seeds(), eventstore.Prefix(*to), eventstore.Partitions(int32(*partitions)),
		eventstore.ReplicationFactor(int16(*replication)), eventstore.MinInsyncReplicas(*minISR), eventstore.MaxRecordBytes(int32(*maxRecord)),
		eventstore.DeliveryTimeout(0))
	if err != nil {
		return err
	}
	defer dst.Close()
	if dstEnd, err := dst.EndOffsets(ctx); err != nil {
		return err
	} else if n := total(dstEnd); n > 0 {
		return fmt.Errorf("%w: %s already holds %d events; copy into a new prefix", errCopyRefused, dst.EventsTopic(), n)
	}
	start := time.Now()
	if err := copyRecords(ctx, src, dst, end); err != nil {
		return err
	}
	took := time.Since(start)
	if after, err := src.EndOffsets(ctx); err != nil {
		return err
	} else if total(after) != total(end) {
		return fmt.Errorf("%w: %s grew from %d to %d events during the copy: stop every node and copy again into a new prefix", errCopyRefused, src.EventsTopic(), total(end), total(after))
	}
	copied, err := dst.EndOffsets(ctx)
	if err != nil {
		return err
	}
	if total(copied) != total(end) {
		return fmt.Errorf("copy-log: %s holds %d events after the copy, not the %d of %s", dst.EventsTopic(), total(copied), total(end), src.EventsTopic())
	}
	fmt.Fprintf(stdout, "copied %d events from %s (%d partitions) to %s (%d partitions) in %s, after folding them in %s to check that no document is being processed\n",
		total(end), src.EventsTopic(), src.Partitions(), dst.EventsTopic(), dst.Partitions(), took.Round(time.Millisecond), checked.Round(time.Millisecond))
	fmt.Fprintf(stdout, "start the nodes with --topic-prefix %s --partitions %d, each without its old views (<data-dir>/views refuse another log): they are rebuilt from the copy\n", *to, dst.Partitions())
	return nil
}

// checkStopped waits, up to wait, until the deployment's duties and
// workers groups have no members: a node still running would append to
// the old log after the copy. Nodes keep their group memberships (static)
// for their session, 10 s, after they stop. Nodes that run only the API
// and the views join no group, and only the check of the log's growth
// during the copy sees them.
func checkStopped(ctx context.Context, src *eventstore.Store, wait time.Duration) error {
	adm := kadm.NewClient(src.Client())
	groups := []string{src.GroupName("duties"), src.GroupName("workers")}
	deadline := time.Now().Add(wait)
	for {
		described, err := adm.DescribeGroups(ctx, groups...)
		if err != nil {
			return fmt.Errorf("%w: copy-log: describe %s: %w", eventstore.ErrUnavailable, strings.Join(groups, ", "), err)
		}
		var live []string
		for _, g := range described.Sorted() {
			if len(g.Members) > 0 {
				live = append(live, fmt.Sprintf("%s has %d members", g.Group, len(g.Members)))
			}
		}
		if len(live) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: nodes of the deployment still run (%s): stop every node first", errCopyRefused, strings.Join(live, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// checkSource returns where the source log ends, after checking that it
// still holds every event and that no document is being processed: the
// new deployment dispatches what is queued again, but a claimed document's
// result would go to the old log.
func checkSource(ctx context.Context, src *eventstore.Store) (map[int32]int64, error) {
	first, err := src.StartOffsets(ctx)
	if err != nil {
		return nil, err
	}
	for p, o := range first {
		if o > 0 {
			return nil, fmt.Errorf("%w: %w: partition %d of %s starts at offset %d, events 0 to %d were deleted", errCopyRefused, eventstore.ErrLogTruncated, p, src.EventsTopic(), o, o-1)
		}
	}
	end, err := src.EndOffsets(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "docket-copy-log-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	v, err := projections.Rebuild(ctx, src, dir, end)
	if err != nil {
		return nil, err
	}
	counts, err := v.DocumentsByStatus()
	v.Close()
	if err != nil {
		return nil, err
	}
	var busy []string
	for s, n := range counts {
		if s.Running() && n > 0 {
			busy = append(busy, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(busy) > 0 {
		sort.Strings(busy)
		return nil, fmt.Errorf("%w: documents are being processed (%s): let them finish, stop every node, then copy", errCopyRefused, strings.Join(busy, ", "))
	}
	return end, nil
}

// copyRecords produces every record of src's event topic below end to
// dst's, each partition read in order.
func copyRecords(ctx context.Context, src, dst *eventstore.Store, end map[int32]int64) error {
	from := map[int32]kgo.Offset{}
	for p, o := range end {
		if o > 0 {
			from[p] = kgo.NewOffset().At(0)
		}
	}
	if len(from) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.Seeds()...), kgo.ClientID("docket-copy-log"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{src.EventsTopic(): from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	if err != nil {
		return fmt.Errorf("copy-log: reader: %w", err)
	}
	defer cl.Close()
	var (
		mu       sync.Mutex
		firstErr error
	)
	produced := func(_ *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for len(from) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fetches.Err(); err != nil {
			return fmt.Errorf("%w: copy-log: read %s: %w", eventstore.ErrUnavailable, src.EventsTopic(), err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			dst.Client().Produce(ctx, &kgo.Record{Topic: dst.EventsTopic(), Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}, produced)
			if r.Offset == end[r.Partition]-1 {
				delete(from, r.Partition)
			}
		})
	}
	if err := dst.Client().Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return fmt.Errorf("%w: copy-log: append to %s: %w", eventstore.ErrUnavailable, dst.EventsTopic(), firstErr)
	}
	return nil
}

// total is how many records lie below offsets: a log's size, given where
// its partitions end, since docket's logs start at 0.
func total(offsets map[int32]int64) int64 {
	var n int64
	for _, o := range offsets {
		n += o
	}
	return n
}
