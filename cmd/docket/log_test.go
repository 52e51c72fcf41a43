package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// orgLog reads every event of the default org from the log, in log order:
// the independent record the views are checked against.
func (tn *testNode) orgLog() []eventstore.Record { return readOrgLog(tn.t, tn.n.store) }

// readOrgLog reads the default org's partition from offset 0 to its end.
func readOrgLog(t *testing.T, s *eventstore.Store) []eventstore.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := s.PartitionFor(domain.OrgID("default"))
	end, err := s.EndOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.NewReader(map[int32]int64{p: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []eventstore.Record
	for len(out) == 0 || out[len(out)-1].Offset < end[p]-1 {
		recs, err := r.Poll(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

// foldLog folds the log per document and counts each document's terminal
// transitions, so a test can require exactly one.
func foldLog(recs []eventstore.Record) (map[string]domain.Document, map[string]int) {
	docs := map[string]domain.Document{}
	terminal := map[string]int{}
	for _, rec := range recs {
		id := domain.DocumentIDOf(rec.Event)
		if id == "" {
			continue
		}
		next, err := docs[id].Apply(rec.Event)
		if err != nil {
			continue
		}
		if next.Status.Terminal() && !docs[id].Status.Terminal() {
			terminal[id]++
		}
		docs[id] = next
	}
	return docs, terminal
}

// textInvoice makes a small, valid plain-text invoice whose amount encodes i.
func textInvoice(i int) []byte { return textInvoiceFor(i) }

// waitFor re-checks cond each time the views apply something, for at most a
// minute.
func (tn *testNode) waitFor(cond func() bool) {
	tn.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			tn.t.Fatal("condition not reached within a minute")
		}
		tn.waitApplied()
	}
}

// waitWorkDrained waits until the worker group has committed every work item
// written so far: everything dispatched has been handled.
func (tn *testNode) waitWorkDrained() {
	tn.t.Helper()
	adm := kadm.NewClient(tn.n.store.Client())
	tn.waitFor(func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		end, err := adm.ListEndOffsets(ctx, tn.n.store.WorkTopic())
		if err != nil {
			return false
		}
		committed, err := adm.FetchOffsets(ctx, tn.n.store.GroupName("workers"))
		if err != nil {
			return false
		}
		drained := true
		end.Each(func(o kadm.ListedOffset) {
			if o.Offset == 0 {
				return
			}
			c, ok := committed.Lookup(o.Topic, o.Partition)
			if !ok || c.At < o.Offset {
				drained = false
			}
		})
		return drained
	})
}
