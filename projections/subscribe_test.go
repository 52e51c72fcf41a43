package projections_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

func uploaded(l *logBuilder, org, doc string) eventstore.Record {
	return l.record(0, &domain.DocumentUploaded{
		Meta: meta(org, 1), DocumentID: doc, BatchName: strp("b"), FileName: doc + ".pdf",
		ContentType: "application/pdf", Size: 1, BlobKey: "sha256/" + doc,
	})
}

// A subscriber sees every fetch applied after it subscribed, in order, and
// the views already answer for it when it arrives.
func TestSubscribeDeliversAppliedFetches(t *testing.T) {
	f := setup(t)
	l := newLog()
	f.apply(uploaded(l, "org_a", "doc_0")) // before: not delivered
	ch, cancel := f.v.Subscribe(8)
	defer cancel()
	first, second := uploaded(l, "org_a", "doc_1"), uploaded(l, "org_a", "doc_2")
	f.apply(first)
	f.apply(first, second) // first is a re-delivery: only second is new
	f.apply(first)         // nothing new: nothing delivered

	got := <-ch
	if len(got) != 1 || got[0].Offset != 1 {
		t.Fatalf("first fetch: %+v", got)
	}
	if _, err := f.v.Document("org_a", "doc_1"); err != nil {
		t.Fatalf("delivered before the view answers: %v", err)
	}
	if off := f.v.Offsets()[0]; off != 2 && off != 3 {
		t.Fatalf("offsets not published before delivery: %d", off)
	}
	got = <-ch
	if len(got) != 1 || got[0].Offset != 2 {
		t.Fatalf("second fetch: %+v", got)
	}
	select {
	case extra := <-ch:
		t.Fatalf("a fetch of nothing new was delivered: %+v", extra)
	default:
	}
}

// A subscriber that does not keep up is dropped: its channel is closed after
// what it had buffered, and the apply loop is never blocked.
func TestSubscribeDropsSlowSubscriber(t *testing.T) {
	f := setup(t)
	l := newLog()
	slow, cancelSlow := f.v.Subscribe(2)
	defer cancelSlow()
	fast, cancelFast := f.v.Subscribe(16)
	defer cancelFast()
	for i := range 5 {
		f.apply(uploaded(l, "org_a", fmt.Sprint("doc_", i)))
	}
	n := 0
	for range slow {
		n++
	}
	if n != 2 {
		t.Fatalf("slow subscriber got %d fetches before the close, want 2", n)
	}
	for i := range 5 {
		if recs := <-fast; recs[0].Offset != int64(i) {
			t.Fatalf("fast subscriber: fetch %d at offset %d", i, recs[0].Offset)
		}
	}
	cancelSlow() // after a drop, cancel is a no-op
	cancelFast()
	cancelFast()
	if _, ok := <-fast; ok {
		t.Fatal("cancelled channel still open")
	}
	f.apply(uploaded(l, "org_a", "doc_after")) // no subscribers: no panic on a closed channel
}

// Subscribing, cancelling and applying race freely (run with -race).
func TestSubscribeConcurrent(t *testing.T) {
	f := setup(t)
	l := newLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ch, cancel := f.v.Subscribe(1)
				var cwg sync.WaitGroup
				cwg.Go(cancel)
				cwg.Go(cancel)
				for range ch {
				}
				cwg.Wait()
			}
		})
	}
	ch, cancel := f.v.Subscribe(256)
	for i := range 200 {
		f.apply(uploaded(l, "org_a", fmt.Sprint("doc_", i)))
	}
	close(stop)
	wg.Wait()
	cancel()
	n := 0
	for recs := range ch {
		if recs[0].Offset != int64(n) {
			t.Fatalf("fetch %d at offset %d", n, recs[0].Offset)
		}
		n++
	}
	if n != 200 {
		t.Fatalf("got %d fetches, want 200", n)
	}
}
