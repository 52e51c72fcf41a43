package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/eventstore"
)

// The ceilings: what the same broker does for plain franz-go clients with
// the records docket wrote, so docket's figures can be read as ratios that
// hold on a noisy machine (both sides see the same noise).

// rate is a throughput figure.
type rate struct {
	Records int     `json:"records"`
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"records_per_second"`
	// CPU is what the same seconds cost in CPU, per record; absent where
	// it was not measured (bench_floor.go).
	CPU *recordCPU `json:"cpu,omitempty"`
	// Views is what the views wrote, for the apply path and the replay.
	Views *viewsWrote `json:"views_wrote,omitempty"`
}

func newRate(n int, bytes int64, d time.Duration) rate {
	s := d.Seconds()
	r := rate{Records: n, Bytes: bytes, Seconds: s}
	if s > 0 {
		r.PerSec = float64(n) / s
	}
	return r
}

// rawProducer is a plain franz-go client configured like the event store's:
// acks=all, idempotent (franz-go's default), no linger, key partitioning.
func rawProducer(seeds []string, extra ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...), kgo.ClientID("docket-bench-raw"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}, extra...)...)
}

// createTopic makes a fresh topic with the given partitions (broker default
// replication) and waits until it has leaders.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("bench: create %s: %w", topic, err)
	}
	for ctx.Err() == nil {
		md, err := adm.Metadata(ctx, topic)
		if td, ok := md.Topics[topic]; err == nil && ok && td.Err == nil && len(td.Partitions) == int(partitions) {
			ready := true
			for _, p := range td.Partitions {
				ready = ready && p.Leader >= 0 && p.Err == nil
			}
			if ready {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ctx.Err()
}

// rawConsume reads topic cold (a new client) from offset 0 up to end, and
// returns the first keep records.
func rawConsume(ctx context.Context, clock cpuClock, seeds []string, topic string, end map[int32]int64, keep int) ([]*kgo.Record, rate, error) {
	parts := map[int32]kgo.Offset{}
	want := 0
	for p, e := range end {
		if e > 0 {
			parts[p] = kgo.NewOffset().At(0)
			want += int(e)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("docket-bench-consume"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		return nil, rate{}, err
	}
	defer cl.Close()
	var out []*kgo.Record
	var bytes int64
	n := 0
	sw := clock.start()
	for n < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, rate{}, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			n++
			bytes += int64(len(r.Key) + len(r.Value))
			if len(out) < keep {
				out = append(out, r)
			}
		})
	}
	return out, sw.rate(n, bytes), nil
}

// rawProduce writes copies of recs (same keys, values, headers) to a fresh
// topic from conc goroutines, each producing one record and waiting for its
// acknowledgement (like the API's handlers). With consume set, a consumer
// (warmed up first) reads the topic meanwhile, and the second rate is
// produce+consume: first produce to last record consumed. The bench
// measures the produce ceiling on its own and produce+consume on another
// topic, so neither pays for the other.
func rawProduce(ctx context.Context, seeds []string, topic string, partitions int32, recs []*kgo.Record, conc int, consume bool, extra ...kgo.Opt) (prod, both rate, err error) {
	cl, err := rawProducer(seeds, extra...)
	if err != nil {
		return
	}
	defer cl.Close()
	if err = createTopic(ctx, cl, topic, partitions); err != nil {
		return
	}
	consumed := make(chan time.Time, 1)
	if consume {
		var cons *kgo.Client
		cons, err = kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.MetadataMinAge(100*time.Millisecond))
		if err != nil {
			return
		}
		defer cons.Close()
		if err = warmConsumer(ctx, seeds, cons, topic, partitions); err != nil {
			return
		}
		go func() {
			n := 0
			for n < len(recs) && ctx.Err() == nil {
				n += cons.PollFetches(ctx).NumRecords()
			}
			consumed <- time.Now()
		}()
	}
	var bytes int64
	for _, r := range recs {
		bytes += int64(len(r.Key) + len(r.Value))
	}
	start := time.Now()
	err = parallel(conc, len(recs), func(i int) error {
		src := recs[i]
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: src.Key, Value: src.Value, Headers: src.Headers}).FirstErr()
	})
	prod = newRate(len(recs), bytes, time.Since(start))
	if err != nil || !consume {
		return
	}
	select {
	case at := <-consumed:
		both = newRate(len(recs), bytes, at.Sub(start))
	case <-ctx.Done():
		err = ctx.Err()
	}
	return
}

// rawLatency produces copies of recs to a fresh topic at a fixed rate (open
// loop) and returns each record's produce -> consumed latency.
func rawLatency(ctx context.Context, seeds []string, topic string, partitions int32, recs []*kgo.Record, perSec float64, d time.Duration) (*hist, error) {
	h := &hist{}
	cl, err := rawProducer(seeds)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, topic, partitions); err != nil {
		return nil, err
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	if err := warmConsumer(ctx, seeds, cons, topic, partitions); err != nil {
		return nil, err
	}
	n := int(perSec * d.Seconds())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for got := 0; got < n && ctx.Err() == nil; {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) { h.add(now.Sub(r.Timestamp)); got++ })
		}
	}()
	start := time.Now()
	every := time.Duration(float64(time.Second) / perSec)
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
			time.Sleep(wait)
		}
		src := recs[i%len(recs)]
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: src.Key, Value: src.Value, Headers: src.Headers}, nil)
	}
	<-done
	return h, ctx.Err()
}

// warmConsumer writes one record to every partition and waits until the
// consumer has read them all: it must be fetching every partition before
// the timed records start, or its start-up (metadata, first fetches)
// would be counted.
func warmConsumer(ctx context.Context, seeds []string, cons *kgo.Client, topic string, partitions int32) error {
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	warm := make([]*kgo.Record, partitions)
	for p := range warm {
		warm[p] = &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("warm")}
	}
	if err := prod.ProduceSync(ctx, warm...).FirstErr(); err != nil {
		return err
	}
	for seen := 0; seen < int(partitions); {
		seen += cons.PollFetches(ctx).NumRecords()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// topicEnds lists a topic's end offsets.
func topicEnds(ctx context.Context, store *eventstore.Store, topic string) (map[int32]int64, error) {
	listed, err := kadm.NewClient(store.Client()).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

func sumEnds(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// parallel calls fn(0..n-1) from conc goroutines, each taking the next
// index when its call returns (a closed loop), and returns the first error.
func parallel(conc, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := fn(int(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
