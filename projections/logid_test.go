package projections_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestRunStopsWhereTheLogEnds runs views whose offsets are past the end
// of the log they meet (a log restored from an older copy, or cut back by
// an unclean leader election): the reader finds nothing at those offsets,
// and Run must return ErrLogTruncated instead of starting the partition
// over from wherever the log starts.
func TestRunStopsWhereTheLogEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	broker, err := eventstore.StartEmbedded(t.TempDir(), "127.0.0.1:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	store, err := eventstore.Open(ctx, []string{broker.Addr()}, eventstore.Prefix("ahead"), eventstore.Partitions(1))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i := range 3 {
		if _, err := store.Append(ctx, &domain.OrgCreated{Meta: eventstore.NewMeta(domain.OrgID("o"), "test", ""), Name: "o"}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}

	f := setup(t)
	l := newLog()
	var recs []eventstore.Record
	for range 10 {
		recs = append(recs, l.record(0, &domain.OrgCreated{Meta: eventstore.NewMeta(domain.OrgID("o"), "test", ""), Name: "o"}))
	}
	if err := f.v.ApplyRecords(recs); err != nil {
		t.Fatal(err)
	}
	err = f.v.Run(ctx, store, nil)
	if !errors.Is(err, eventstore.ErrLogTruncated) {
		t.Fatalf("Run on a log of 3 records with views at offset 10: %v, want ErrLogTruncated", err)
	}
	if got := f.v.Offsets()[0]; got != 10 {
		t.Errorf("the views moved to offset %d, want them left at 10", got)
	}
}
