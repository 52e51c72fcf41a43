package eventstore_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/docket/docket/eventstore"
)

// heldProduce holds the next Produce request an embedded broker receives
// until release is closed. (Produce names topics by id from Kafka 4 on, so
// it does not look at which.)
type heldProduce struct {
	held, release chan struct{}
}

func holdNextProduce(c *kfake.Cluster) *heldProduce {
	h := &heldProduce{held: make(chan struct{}), release: make(chan struct{})}
	first := true
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if first {
			first = false
			close(h.held)
			c.SleepControl(func() { <-h.release })
		}
		return nil, nil, false // the broker answers it as usual
	})
	return h
}

// roundsSetup opens a store on an embedded broker of its own, whose next
// Produce request, the test's first append, is held (holdNextProduce).
func roundsSetup(t *testing.T, opts ...eventstore.Opt) (*eventstore.Store, *heldProduce) {
	t.Helper()
	skipOnRealKafka(t) // a real broker cannot be told to hold a request
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(testPartitions))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	prefix := testPrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s, err := eventstore.Open(ctx, c.ListenAddrs(), append([]eventstore.Opt{eventstore.Prefix(prefix), eventstore.Partitions(testPartitions)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	h := holdNextProduce(c)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	return s, h
}

// waitBounded waits for an append, failing the test if it is still waiting
// when the test's time is up.
func waitBounded(t *testing.T, wait func() ([]eventstore.Position, error)) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := wait()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-testCtx(t).Done():
		t.Fatal("the append is still waiting")
		return nil
	}
}

// heldRound opens a store with one round per partition (roundsSetup) and
// starts org's first append, whose round the broker holds: org's appends
// after it wait in their partition's queue. The store closes with the test.
func heldRound(t *testing.T, org string) (*eventstore.Store, *heldProduce, func() ([]eventstore.Position, error)) {
	t.Helper()
	s, h := roundsSetup(t, eventstore.AppendRounds(1))
	t.Cleanup(s.Close)
	first := s.AppendAsync(testCtx(t), sampleEvent(org, 0))
	waitHeld(t, h)
	return s, h, first
}

func waitHeld(t *testing.T, h *heldProduce) {
	t.Helper()
	select {
	case <-h.held:
	case <-testCtx(t).Done():
		t.Fatal("the first append never reached the broker")
	}
}

// TestAppendsWaitForTheRoundAhead: with one round per partition, appends
// that arrive while the partition's round is unacknowledged wait in its
// queue, and go out, in order, once it is acknowledged.
func TestAppendsWaitForTheRoundAhead(t *testing.T) {
	t.Parallel()
	const org = "org-rounds"
	s, h, first := heldRound(t, org)
	ctx := testCtx(t)
	waits := []func() ([]eventstore.Position, error){first}
	for n := 1; n < 10; n++ {
		waits = append(waits, s.AppendAsync(ctx, sampleEvent(org, n)))
	}
	if got := s.QueuedAppends(s.PartitionFor(org)); got != 9 {
		t.Fatalf("%d appends wait for the round ahead, want 9", got)
	}
	close(h.release)
	for n, wait := range waits {
		pos, err := wait()
		if err != nil {
			t.Fatalf("append %d: %v", n, err)
		}
		if pos[0].Partition != s.PartitionFor(org) || pos[0].Offset != int64(n) {
			t.Fatalf("append %d landed at %+v, want offset %d of partition %d", n, pos[0], n, s.PartitionFor(org))
		}
	}
	if got := s.QueuedAppends(s.PartitionFor(org)); got != 0 {
		t.Fatalf("%d appends still queued after all were acknowledged", got)
	}
}

// TestQueuedAppendKeepsItsAppendTime: an append that waits for the round
// ahead reaches the log with the time it was appended, not the time its
// round started. franz-go counts the delivery timeout from that timestamp,
// so the wait in the queue is part of DeliveryTimeout, not added to it.
func TestQueuedAppendKeepsItsAppendTime(t *testing.T) {
	t.Parallel()
	const org = "org-stamp"
	s, h, first := heldRound(t, org)
	queued := s.AppendAsync(testCtx(t), sampleEvent(org, 1))
	appended := time.Now()
	if got := s.QueuedAppends(s.PartitionFor(org)); got != 1 {
		t.Fatalf("%d appends wait for the round ahead, want 1", got)
	}
	// Kafka keeps milliseconds: the round must start in a later one than
	// the append for the two times to differ in the log.
	for time.Now().UnixMilli() <= appended.UnixMilli() {
		runtime.Gosched()
	}
	close(h.release)
	for n, wait := range []func() ([]eventstore.Position, error){first, queued} {
		if _, err := wait(); err != nil {
			t.Fatalf("append %d: %v", n, err)
		}
	}
	recs := readN(t, newReader(t, s, map[int32]int64{s.PartitionFor(org): 0}), 2)
	if got := recs[1].Timestamp; got.UnixMilli() > appended.UnixMilli() {
		t.Fatalf("the queued append reached the log stamped %s, after it was appended (%s): its round's start",
			got.Format(time.StampMicro), appended.Format(time.StampMicro))
	}
}

// TestCloseFailsAppendsWaitingForARound: Close fails the appends still
// queued, and any after it, instead of leaving their callers waiting.
func TestCloseFailsAppendsWaitingForARound(t *testing.T) {
	t.Parallel()
	s, h := roundsSetup(t, eventstore.AppendRounds(1))
	ctx := testCtx(t)
	first := s.AppendAsync(ctx, sampleEvent("org-close", 0))
	waitHeld(t, h)
	var queued []func() ([]eventstore.Position, error)
	for n := 1; n < 4; n++ {
		queued = append(queued, s.AppendAsync(ctx, sampleEvent("org-close", n)))
	}
	s.Close()
	for n, wait := range queued {
		if err := waitBounded(t, wait); !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("queued append %d after Close: %v, want ErrUnavailable", n+1, err)
		}
	}
	if _, err := s.Append(ctx, sampleEvent("org-close", 9)); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("append after Close: %v, want ErrUnavailable", err)
	}
	close(h.release)
	_, _ = first() // sent before Close: either outcome is a fair one
}

// TestOpenRefusesNegativeAppendRounds: Open refuses it before it connects.
func TestOpenRefusesNegativeAppendRounds(t *testing.T) {
	t.Parallel()
	_, err := eventstore.Open(context.Background(), []string{"127.0.0.1:1"}, eventstore.AppendRounds(-1))
	if !errors.Is(err, eventstore.ErrInvalidOption) {
		t.Fatalf("Open = %v, want ErrInvalidOption", err)
	}
}
