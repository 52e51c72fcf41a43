package eventstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docket/docket/eventstore"
)

// TestRoundLingerGathersSpacedAppends: with a RoundLinger, appends to an
// idle partition that arrive milliseconds apart go out as one round;
// without it, each would find the partition idle again and start a round
// of its own. (A round is handed to franz-go record by record, so it is
// usually one Produce request but may be split across two: the test counts
// rounds, which the store decides.)
func TestRoundLingerGathersSpacedAppends(t *testing.T) {
	t.Parallel()
	seeds, prefix := testPlace(t)
	s := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions),
		eventstore.RoundLinger(time.Second))
	ctx := testCtx(t)
	const org = "org-round-linger"
	p := s.PartitionFor(org)
	var waits []func() ([]eventstore.Position, error)
	for n := range 10 {
		waits = append(waits, s.AppendAsync(ctx, sampleEvent(org, n)))
		if n == 0 && !s.Lingering(p) {
			t.Fatal("the first append to an idle partition started its round at once")
		}
		time.Sleep(5 * time.Millisecond) // the spacing under test, not a wait for anything
	}
	for n, wait := range waits {
		pos, err := wait()
		if err != nil {
			t.Fatalf("append %d: %v", n, err)
		}
		if pos[0].Offset != int64(n) {
			t.Fatalf("append %d landed at offset %d", n, pos[0].Offset)
		}
	}
	if got := s.RoundsStarted(p); got != 1 {
		t.Fatalf("10 appends 5 ms apart went out in %d rounds, want 1 within a 1 s round linger", got)
	}
}

// TestRoundLingerSparesABusyPartition: an append that finds its
// partition's round in flight does not linger: it waits in the queue for
// that round, as it would without a RoundLinger, and goes out with the
// next.
func TestRoundLingerSparesABusyPartition(t *testing.T) {
	t.Parallel()
	const org = "org-round-busy"
	s, h := roundsSetup(t, eventstore.AppendRounds(1), eventstore.RoundLinger(50*time.Millisecond))
	t.Cleanup(s.Close)
	ctx := testCtx(t)
	p := s.PartitionFor(org)
	first := s.AppendAsync(ctx, sampleEvent(org, 0))
	if !s.Lingering(p) {
		t.Fatal("the first append to an idle partition started its round at once")
	}
	waitHeld(t, h) // its round started once the linger passed, and the broker holds it
	queued := s.AppendAsync(ctx, sampleEvent(org, 1))
	if s.Lingering(p) {
		t.Fatal("an append behind a round in flight lingers")
	}
	if got := s.QueuedAppends(p); got != 1 {
		t.Fatalf("%d appends wait for the round ahead, want 1", got)
	}
	close(h.release)
	for n, wait := range []func() ([]eventstore.Position, error){first, queued} {
		if err := waitBounded(t, wait); err != nil {
			t.Fatalf("append %d: %v", n, err)
		}
	}
}

// TestOpenRefusesANegativeRoundLinger: Open refuses it before it connects.
func TestOpenRefusesANegativeRoundLinger(t *testing.T) {
	t.Parallel()
	_, err := eventstore.Open(context.Background(), []string{"127.0.0.1:1"}, eventstore.RoundLinger(-time.Millisecond))
	if !errors.Is(err, eventstore.ErrInvalidOption) {
		t.Fatalf("Open = %v, want ErrInvalidOption", err)
	}
}
