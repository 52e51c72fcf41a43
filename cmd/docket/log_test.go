package main

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// orgLog reads every event of the default org from the log, in log order:
// the independent record the views are checked against.
func (tn *testNode) orgLog() []eventstore.Record {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := tn.n.store.PartitionFor(domain.OrgID("default"))
	end, err := tn.n.store.EndOffsets(ctx)
	if err != nil {
		tn.t.Fatal(err)
	}
	r, err := tn.n.store.NewReader(map[int32]int64{p: 0})
	if err != nil {
		tn.t.Fatal(err)
	}
	defer r.Close()
	var out []eventstore.Record
	for len(out) == 0 || out[len(out)-1].Offset < end[p]-1 {
		recs, err := r.Poll(ctx, 0)
		if err != nil {
			tn.t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
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
