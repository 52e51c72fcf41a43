package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/internal/kafkatest"
	"github.com/docket/docket/projections"
)

// startErr starts a node with tn's configuration and returns why it did
// not start (nil, and the node closed, if it did).
func (tn *testNode) startErr() error {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := startNode(ctx, tn.cfg, zerolog.New(zerolog.NewTestWriter(tn.t)).Level(zerolog.WarnLevel))
	if err == nil {
		n.close()
	}
	return err
}

// TestViewsOfAnotherLogRefuseToStart restarts a node on its data dir with
// the event log replaced: first another --topic-prefix, then its own topic
// deleted and created again. Resumed from their offsets, the views would
// skip the new log's first events and time out every write; the node
// must refuse to start, and docket verify must say so too.
func TestViewsOfAnotherLogRefuseToStart(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	if _, code := tn.upload("mine", "inv-00.txt", textInvoice(0), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	// Deleted while the node runs: an embedded broker stops with it.
	topic := tn.n.store.EventsTopic()
	kafkatest.DeleteTopic(t, tn.admin(), topic)
	tn.stop()

	own := tn.cfg.TopicPrefix
	tn.cfg.TopicPrefix = own + "-other"
	if err := tn.startErr(); !errors.Is(err, projections.ErrForeignLog) {
		t.Fatalf("start on another prefix: %v, want ErrForeignLog", err)
	}
	tn.cfg.TopicPrefix = own
	err := tn.startErr()
	if !errors.Is(err, projections.ErrForeignLog) {
		t.Fatalf("start after %s was deleted (and created again): %v, want ErrForeignLog", topic, err)
	}
	t.Logf("refused: %v", err)
	if out, err := tn.cli("verify"); !errors.Is(err, projections.ErrForeignLog) {
		t.Fatalf("verify of views of a deleted topic: %v, want ErrForeignLog\n%s", err, out)
	}
}

// TestNodeRefusesALogThatLostEvents deletes the first records of the
// org's partition, as a retention on the event topic would, and starts a
// second node with an empty data dir on the same log: built from what is
// left, its views would lack the org, its first batch and document. It
// must refuse to start and name the missing offsets. The first node, whose
// views hold those events already, restarts as before.
func TestNodeRefusesALogThatLostEvents(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	if _, code := tn.upload("kept", "inv-00.txt", textInvoice(0), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	store := tn.n.store
	p := store.PartitionFor(domain.OrgID("default"))
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: store.EventsTopic(), Partition: p, At: 2})
	deleted, err := tn.admin().DeleteRecords(context.Background(), offsets)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}

	fresh := &testNode{t: t, cfg: tn.cfg}
	fresh.cfg.DataDir = t.TempDir()
	fresh.cfg.KafkaBrokers = strings.Join(store.Seeds(), ",")
	err = fresh.startErr()
	if !errors.Is(err, eventstore.ErrLogTruncated) {
		t.Fatalf("a node with empty views on a log that lost events: %v, want ErrLogTruncated", err)
	}
	t.Logf("refused: %v", err)
	// docket events shows what is left, and says what is not.
	out, warned, err := tn.cliStderr("events", "--org", "default")
	if err != nil {
		t.Fatalf("docket events on a log that lost events: %v", err)
	}
	if !strings.Contains(warned, fmt.Sprintf("partition %d starts at offset 2: events 0 to 1 were deleted", p)) {
		t.Errorf("docket events did not say which events were deleted: %q", warned)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], fmt.Sprintf(`"partition":%d,"offset":2,`, p)) {
		t.Fatalf("docket events printed %d lines, the first %q; want the org's partition from offset 2", len(lines), lines[0])
	}

	if tn.cfg.KafkaBrokers != "" {
		tn.stop() // an embedded broker would stop with the node
		tn.start()
	}
	if code := tn.get("/v1/batches/kept", nil); code != http.StatusOK {
		t.Fatalf("the first node's batch: %d", code)
	}
}
