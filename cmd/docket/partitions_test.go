package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
)

// TestAddingPartitionsUnderARunningDeployment adds partitions to the event
// and work topics, as an operator would with kafka-topics --alter, chosen
// so that Kafka's hashing would move the org to another partition, and
// restarts the node. The org's later events must join its history in its
// partition (DESIGN invariant 1), the added partitions stay empty, the
// batch completes, and the views equal a rebuild.
func TestAddingPartitionsUnderARunningDeployment(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	if _, code := tn.upload("grow", "inv-00.txt", textInvoice(0), ""); code != http.StatusCreated {
		t.Fatalf("upload before: %d", code)
	}
	store := tn.n.store
	org := domain.OrgID("default")
	home, recorded := store.PartitionFor(org), int(store.Partitions())
	hash := kgo.StickyKeyPartitioner(nil).ForTopic(store.EventsTopic())
	grown := recorded + 1
	for int32(hash.Partition(&kgo.Record{Key: []byte(org)}, grown)) == home {
		grown++
	}
	adm := tn.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{store.EventsTopic(), store.WorkTopic()} {
		resp, err := adm.UpdatePartitions(ctx, grown, topic)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("add partitions to %s: %v", topic, err)
		}
	}
	t.Logf("%s: %d partitions recorded, grown to %d; the org hashes to %d, over %d to %d",
		store.EventsTopic(), recorded, grown, home, grown, hash.Partition(&kgo.Record{Key: []byte(org)}, grown))

	tn.stop()
	tn.start()
	if _, code := tn.upload("grow", "inv-01.txt", textInvoice(1), ""); code != http.StatusCreated {
		t.Fatalf("upload after: %d", code)
	}
	if code := tn.do("POST", "/v1/batches/grow/process", nil, "", nil, nil); code != http.StatusAccepted {
		t.Fatalf("process: %d", code)
	}
	b := tn.waitBatch("grow", func(b batchView) bool { return b.AllDone })
	if b.Total != 2 || b.Counts["succeeded"] != 2 {
		t.Fatalf("batch after adding partitions: %+v", b)
	}
	if p := tn.n.store.PartitionFor(org); p != home {
		t.Errorf("PartitionFor after restart = %d, want %d", p, home)
	}
	ends, err := tn.admin().ListEndOffsets(ctx, store.EventsTopic())
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if int(o.Partition) >= recorded && o.Offset != 0 {
			t.Errorf("added partition %d holds %d records", o.Partition, o.Offset)
		}
	})
	succeeded := 0
	for _, rec := range tn.orgLog() {
		if _, ok := rec.Event.(*domain.DocumentSucceeded); ok {
			succeeded++
		}
	}
	if succeeded != 2 {
		t.Errorf("the org's partition %d holds %d DocumentSucceeded, want 2", home, succeeded)
	}
	tn.verify()
}

// admin is a Kafka admin client of the node's brokers (an embedded
// broker's address changes when the node restarts), closed with the test.
func (tn *testNode) admin() *kadm.Client {
	tn.t.Helper()
	seeds := strings.Split(tn.cfg.KafkaBrokers, ",")
	if tn.cfg.KafkaBrokers == "" {
		seeds = []string{tn.n.broker.Addr()}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		tn.t.Fatal(err)
	}
	tn.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
