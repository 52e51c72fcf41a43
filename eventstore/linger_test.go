package eventstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/docket/docket/eventstore"
)

// produceRequests counts the Produce requests a store's clients write.
type produceRequests struct{ n atomic.Int64 }

func (c *produceRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Produce.Int16() && err == nil {
		c.n.Add(1)
	}
}

// TestLingerGathersSpacedAppends: with a Linger, appends to one partition
// that arrive milliseconds apart reach the broker in one request. They are
// spaced on purpose: back to back, the producer gathers them whatever its
// linger (the first request is in flight while the rest queue), and the
// test could not tell the option from its absence.
func TestLingerGathersSpacedAppends(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	var produced produceRequests
	s := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions),
		eventstore.Linger(time.Second), eventstore.KafkaHooks(&produced))
	ctx := testCtx(t)
	opened := produced.n.Load() // Open records the topics' layout
	var waits []func() ([]eventstore.Position, error)
	for n := range 10 {
		waits = append(waits, s.AppendAsync(ctx, sampleEvent("org-linger", n)))
		time.Sleep(5 * time.Millisecond) // the spacing under test, not a wait for anything
	}
	partitions := map[int32]bool{}
	for _, wait := range waits {
		pos, err := wait()
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		partitions[pos[0].Partition] = true
	}
	if len(partitions) != 1 {
		t.Fatalf("one org's events went to %d partitions", len(partitions))
	}
	if got := produced.n.Load() - opened; got != 1 {
		t.Fatalf("10 appends 5 ms apart took %d Produce requests, want 1 within a 1 s linger", got)
	}
}

// TestOpenRefusesANegativeLinger: Open refuses it before it connects.
func TestOpenRefusesANegativeLinger(t *testing.T) {
	t.Parallel()
	_, err := eventstore.Open(context.Background(), []string{"127.0.0.1:1"}, eventstore.Linger(-time.Millisecond))
	if !errors.Is(err, eventstore.ErrInvalidOption) {
		t.Fatalf("Open = %v, want ErrInvalidOption", err)
	}
}
