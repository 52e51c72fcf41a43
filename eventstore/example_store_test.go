package eventstore_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

func ExampleStore_Append() {
	dir, err := os.MkdirTemp("", "docket-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// An embedded broker; any Kafka cluster's seeds would do as well.
	broker, err := eventstore.StartEmbedded(dir, "127.0.0.1:0", 4)
	if err != nil {
		panic(err)
	}
	defer broker.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := eventstore.Open(ctx, []string{broker.Addr()}, eventstore.Partitions(4))
	if err != nil {
		panic(err)
	}
	defer store.Close()

	pos, err := store.Append(ctx, &domain.OrgCreated{
		Meta: eventstore.NewMeta("acme", "admin", ""),
		Name: "Acme",
	})
	if err != nil {
		panic(err)
	}

	// Read the org's partition from the appended event's offset.
	r, err := store.NewReader(map[int32]int64{pos[0].Partition: pos[0].Offset})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	recs, err := r.Poll(ctx, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(recs[0].Event.Type())
	// Output: OrgCreated
}
