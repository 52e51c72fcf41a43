package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/worker"
)

// A worker takes a work item from the work topic, claims the document and
// appends the outcome to the event log.
func Example() {
	dir, _ := os.MkdirTemp("", "worker-example-")
	defer os.RemoveAll(dir)
	broker, _ := eventstore.StartEmbedded(filepath.Join(dir, "kafka"), "127.0.0.1:0", 1)
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := eventstore.Open(ctx, []string{broker.Addr()}, eventstore.Partitions(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	blobs, _ := blobstore.NewFS(filepath.Join(dir, "blobs"))
	invoice := "INVOICE\nDescription   Qty   Unit Price   Amount\nWidget   2   5.00   10.00\nTotal: 10.00 USD\n"
	blob, _ := blobs.Put(ctx, strings.NewReader(invoice))
	_ = store.AppendWork(ctx, eventstore.WorkItem{
		ID: "evt_1", OrgID: "org_example", DocumentID: "doc_1", Attempt: 1,
		Phase: domain.PhaseFull, BlobKey: blob.Key, FileName: "invoice.txt",
	})

	w := worker.New(store, blobs)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()

	r, _ := store.NewReader(map[int32]int64{0: 0})
	defer r.Close()
	for seen := 0; seen < 3; {
		recs, err := r.Poll(ctx, 0)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, rec := range recs {
			fmt.Println(rec.Event.Type())
			if s, ok := rec.Event.(*domain.DocumentSucceeded); ok {
				fmt.Printf("%d line item(s), %s\n", len(s.LineItems), *s.Currency)
			}
			seen++
		}
	}
	stop()
	<-done
	// Output:
	// ProcessingStarted
	// DocumentPreprocessed
	// DocumentSucceeded
	// 1 line item(s), USD
}
