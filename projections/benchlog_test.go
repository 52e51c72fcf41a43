package projections_test

import (
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// oneOrgLog makes the log `docket bench` writes, as a run of it read back
// with `docket events` showed (2026-12-07, 301,495 records): one
// organisation, so one partition; the lifecycles of 32 clients'
// documents interleaved; ids as eventstore.NewID makes them (26 base32
// characters after a prefix, in time order); seven records a document
// (upload into a batch of its own, the batch's webhook, queue, claim,
// preprocessed, succeeded with two line items, and the delivery of the
// batch's batch.completed notification). The log of benchLog differs in
// all of these (12 partitions, short sequential ids, whole lifecycles one
// after another), and the history's copies compress much better in this
// one (BENCHMARKS.md, item 43).
type oneOrgLog struct {
	l        *logBuilder
	codec    *eventstore.Codec
	rnd      *rand.Rand
	inFlight []lifecycle
	done     []string // batches completed by the last fetch
	docs     int
	sec      int64
	ids      int
	key      string // the clients' API key id
	worker   string
}

const oneOrg = "org_default"

func newOneOrgLog(tb testing.TB) *oneOrgLog {
	codec, err := eventstore.NewCodec()
	if err != nil {
		tb.Fatal(err)
	}
	g := &oneOrgLog{l: newLog(), codec: codec, rnd: rand.New(rand.NewPCG(43, 43))}
	g.key, g.worker = g.id("key:key_"), g.id("worker:node_")
	return g
}

// id is prefix and an id as eventstore.NewID makes them: 48 bits of
// milliseconds and 80 random bits, in base32, so that they sort by
// creation time. The log's clock moves a millisecond every ten ids, about
// as fast as the bench writes.
func (g *oneOrgLog) id(prefix string) string {
	g.ids++
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(1_796_000_000_000+g.ids/10)<<16)
	binary.BigEndian.PutUint16(b[6:], uint16(g.rnd.Uint32()))
	binary.BigEndian.PutUint64(b[8:], g.rnd.Uint64())
	return prefix + idEncoding.EncodeToString(b[:])
}

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

func (g *oneOrgLog) meta(actor, correlation string) domain.Meta {
	g.sec++
	return domain.Meta{EventID: g.id("evt_"), OrgID: oneOrg, OccurredAt: at(g.sec), Actor: actor, CorrelationID: correlation}
}

// lifecycle is a document's events yet to be written, in its batch.
type lifecycle struct {
	batch  string
	events []domain.Event
}

func (g *oneOrgLog) lifecycle() lifecycle {
	g.docs++
	doc, claim, batch := g.id("doc_"), g.id("clm_"), fmt.Sprintf("bench-%d", g.docs)
	blob := fmt.Sprintf("%064x", g.rnd.Uint64())
	usd := "USD"
	items := []domain.LineItem{{Description: fmt.Sprintf("Widget model %d", g.docs%100), Quantity: 2, UnitPrice: 45.5, Amount: 91}, {Description: "Service fee", Quantity: 1, UnitPrice: 10, Amount: 10}}
	queued := g.meta(g.key, g.id("req_"))
	run := g.id("evt_")
	return lifecycle{batch: batch, events: []domain.Event{
		&domain.DocumentUploaded{Meta: g.meta(g.key, g.id("req_")), DocumentID: doc, BatchName: &batch, FileName: batch + ".txt", ContentType: "application/octet-stream", Size: 188, BlobKey: blob},
		&domain.BatchWebhookSet{Meta: g.meta(g.key, g.id("req_")), BatchName: batch, URL: "http://127.0.0.1:41234/hook", Secret: "whsec_" + g.id("")},
		&domain.DocumentQueued{Meta: queued, DocumentID: doc, Phase: domain.PhaseFull, Attempt: 1},
		&domain.ProcessingStarted{Meta: g.meta(g.worker, run), DocumentID: doc, Phase: domain.PhaseFull, Attempt: 1, ClaimID: claim, Worker: g.worker},
		&domain.DocumentPreprocessed{Meta: g.meta(g.worker, run), DocumentID: doc, ClaimID: claim, ContentType: "text/plain", Pages: 1, TextChars: 188},
		&domain.DocumentSucceeded{Meta: g.meta(g.worker, run), DocumentID: doc, ClaimID: claim, Currency: &usd, LineItems: items},
	}}
}

// fetch returns the next 4,096 or so records: the deliveries of the
// batches the last fetch completed (whose notifications it reads from v,
// which must have applied every fetch before), then the next steps of the
// documents in flight, in a random order.
func (g *oneOrgLog) fetch(tb testing.TB, v *projections.Views) []eventstore.Record {
	recs := make([]eventstore.Record, 0, 4096)
	for _, batch := range g.done {
		ns, err := v.BatchNotifications(oneOrg, batch)
		if err != nil || len(ns) != 1 {
			tb.Fatalf("batch %s: %d notifications, %v", batch, len(ns), err)
		}
		recs = append(recs, g.l.record(0, &domain.WebhookDeliveryAttempted{Meta: g.meta("duty:webhooks", ns[0].ID), NotificationID: ns[0].ID,
			Attempt: 1, HTTPStatus: 204, Outcome: domain.DeliveryDelivered}))
	}
	g.done = g.done[:0]
	for len(recs) < 4096 {
		for len(g.inFlight) < 32 {
			g.inFlight = append(g.inFlight, g.lifecycle())
		}
		i := g.rnd.IntN(len(g.inFlight))
		lc := &g.inFlight[i]
		recs = append(recs, g.l.record(0, lc.events[0]))
		if lc.events = lc.events[1:]; len(lc.events) == 0 {
			g.done = append(g.done, lc.batch)
			g.inFlight = slices.Delete(g.inFlight, i, i+1)
		}
	}
	for i := range recs {
		var err error
		if recs[i].Value, err = g.codec.Encode(recs[i].Event); err != nil {
			tb.Fatal(err)
		}
	}
	return recs
}
