package eventstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/eventstore"
)

// TestDeliveryTimeoutCountsFromTheRecordsTimestamp: franz-go counts the
// delivery timeout from a record's timestamp, so a record an hour old
// fails at once under the default (30 s) and is produced with none, as
// docket copy-log produces the records it copies.
func TestDeliveryTimeoutCountsFromTheRecordsTimestamp(t *testing.T) {
	t.Parallel()
	old := func(s *eventstore.Store) *kgo.Record {
		return &kgo.Record{Topic: s.EventsTopic(), Key: []byte("org_old"), Value: []byte("copied"), Timestamp: time.Now().Add(-time.Hour)}
	}
	s, seeds := setup(t)
	if err := s.Client().ProduceSync(testCtx(t), old(s)).FirstErr(); !errors.Is(err, kgo.ErrRecordTimeout) {
		t.Fatalf("a record an hour old under the default delivery timeout: %v, want kgo.ErrRecordTimeout", err)
	}
	unbound := openStore(t, seeds, eventstore.Prefix(prefixOf(s)), eventstore.DeliveryTimeout(0))
	rec := old(unbound)
	if err := unbound.Client().ProduceSync(testCtx(t), rec).FirstErr(); err != nil {
		t.Fatalf("a record an hour old with no delivery timeout: %v", err)
	}
	if _, err := eventstore.Open(testCtx(t), seeds, eventstore.Prefix(prefixOf(s)), eventstore.DeliveryTimeout(-time.Second)); !errors.Is(err, eventstore.ErrInvalidOption) {
		t.Fatalf("a negative delivery timeout: %v, want ErrInvalidOption", err)
	}
}
