package eventstore_test

import (
	"context"
	"net"
	"reflect"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// startEmbedded starts an embedded broker that is closed when the test ends
// (closing twice is safe).
func startEmbedded(t *testing.T, dir, listen string) *eventstore.Embedded {
	t.Helper()
	e, err := eventstore.StartEmbedded(dir, listen, testPartitions)
	if err != nil {
		t.Fatalf("StartEmbedded(%q): %v", listen, err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestEmbeddedPersistence restarts the embedded broker on its data
// directory: every acknowledged record is still there, at the same offset.
func TestEmbeddedPersistence(t *testing.T) {
	skipOnRealKafka(t)
	t.Parallel()
	dir := t.TempDir()
	prefix := testPrefix(t)
	ctx := testCtx(t)

	e1 := startEmbedded(t, dir, "127.0.0.1:0")
	s1 := openStore(t, []string{e1.Addr()}, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	orgs := orgsByPartition(t, s1, "org")
	want := map[eventstore.Position]domain.Event{}
	for round := range 3 {
		var events []domain.Event
		for _, org := range orgs {
			events = append(events, sampleEvent(org, 2*round), sampleEvent(org, 2*round+1))
		}
		for i, p := range appendOK(t, s1, events...) {
			want[p] = events[i]
		}
	}
	if err := s1.AppendWork(ctx, eventstore.WorkItem{ID: "w1", OrgID: "org-1", DocumentID: "doc-1", Attempt: 1, Phase: domain.PhaseFull}); err != nil {
		t.Fatalf("AppendWork: %v", err)
	}
	end1, err := s1.EndOffsets(ctx)
	if err != nil {
		t.Fatalf("EndOffsets: %v", err)
	}
	s1.Close()
	e1.Close()

	e2 := startEmbedded(t, dir, "127.0.0.1:0")
	s2 := openStore(t, []string{e2.Addr()}, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions+2))
	if s2.Partitions() != s1.Partitions() {
		t.Fatalf("after restart: %d partitions, want %d", s2.Partitions(), s1.Partitions())
	}
	end2, err := s2.EndOffsets(ctx)
	if err != nil {
		t.Fatalf("EndOffsets: %v", err)
	}
	if !reflect.DeepEqual(end2, end1) {
		t.Fatalf("after restart EndOffsets = %v, want %v", end2, end1)
	}

	r := newReader(t, s2, fromStart(s2))
	for _, rec := range readN(t, r, len(want)) {
		e, ok := want[rec.Position]
		if !ok {
			t.Errorf("after restart: unexpected record at %+v", rec.Position)
			continue
		}
		delete(want, rec.Position)
		if rec.Err != nil {
			t.Errorf("after restart: record %+v: %v", rec.Position, rec.Err)
		} else if !reflect.DeepEqual(rec.Event, e) {
			t.Errorf("after restart: record %+v = %#v, want %#v", rec.Position, rec.Event, e)
		}
	}
	if len(want) > 0 {
		t.Errorf("after restart: %d records missing: %v", len(want), want)
	}
	w := consumeRaw(t, []string{e2.Addr()}, s2.WorkTopic(), 1)
	if it, err := eventstore.UnmarshalWork(w[0].Value); err != nil || it.ID != "w1" {
		t.Errorf("work item after restart = %+v, %v", it, err)
	}

	// The log goes on where it stopped.
	p := appendOK(t, s2, sampleEvent(orgs[0], 100))[0]
	if p.Offset != end1[p.Partition] {
		t.Errorf("first append after restart at %+v, want offset %d", p, end1[p.Partition])
	}
}

// TestEmbeddedListen starts the broker on port 0: Addr is the real bound
// address, and a plain Kafka client can produce to and consume from it.
func TestEmbeddedListen(t *testing.T) {
	skipOnRealKafka(t)
	t.Parallel()
	for _, listen := range []string{"127.0.0.1:0", ":0"} {
		t.Run(listen, func(t *testing.T) {
			t.Parallel()
			e := startEmbedded(t, t.TempDir(), listen)
			_, port, err := net.SplitHostPort(e.Addr())
			if err != nil {
				t.Fatalf("Addr %q: %v", e.Addr(), err)
			}
			if n, err := strconv.Atoi(port); err != nil || n <= 0 {
				t.Fatalf("Addr %q has no bound port", e.Addr())
			}

			// The address is taken while the broker runs.
			if e2, err := eventstore.StartEmbedded(t.TempDir(), e.Addr(), 1); err == nil {
				e2.Close()
				t.Errorf("second broker on %s started", e.Addr())
			}

			ctx := testCtx(t)
			cl := rawClient(t, []string{e.Addr()},
				kgo.ConsumeTopics("plain"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			)
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
				t.Fatalf("CreateTopic: %v", err)
			}
			res := cl.ProduceSync(ctx, &kgo.Record{Topic: "plain", Key: []byte("k"), Value: []byte("hello")})
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", e.Addr(), err)
			}
			got := consumeOne(ctx, t, cl)
			if string(got.Key) != "k" || string(got.Value) != "hello" || got.Offset != res[0].Record.Offset {
				t.Errorf("consumed %q=%q at %d, want k=hello at %d", got.Key, got.Value, got.Offset, res[0].Record.Offset)
			}
		})
	}
}

func consumeOne(ctx context.Context, t *testing.T, cl *kgo.Client) *kgo.Record {
	t.Helper()
	for {
		fs := cl.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatalf("consume: %v", ctx.Err())
		}
		if recs := fs.Records(); len(recs) > 0 {
			return recs[0]
		}
	}
}
