package main

import (
	"context"
	"time"

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
