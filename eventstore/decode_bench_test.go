package eventstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// BenchmarkDecodeLifecycle decodes the events of whole document lifecycles,
// the shape of the log `docket bench` writes: the cost every consumer that
// folds the log pays before it folds anything (BENCHMARKS.md compares it
// with a raw consume, which decodes nothing).
func BenchmarkDecodeLifecycle(b *testing.B) {
	c := codecForTest(b)
	at := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	m := func(n int) domain.Meta {
		return domain.Meta{EventID: fmt.Sprintf("evt_06h48j7x9stksfw5pkenzg%04d", n), OrgID: "org_06h48j7x9stksfw5pkenzg1408", OccurredAt: at.Add(time.Duration(n) * time.Millisecond), Actor: "key_06h48j7x9stksfw5pkenzg1408"}
	}
	var vals [][]byte
	items := []domain.LineItem{{Description: "Widget", Quantity: 2, UnitPrice: 10.5, Amount: 21}, {Description: "Service fee", Quantity: 1, UnitPrice: 10, Amount: 10}}
	for d := range 100 {
		id, batch, claim := fmt.Sprintf("doc_06h48j7x9stksfw5pkenzg%04d", d), fmt.Sprintf("bench-%d", d), fmt.Sprintf("clm_%d", d)
		for _, e := range []domain.Event{
			&domain.DocumentUploaded{Meta: m(d), DocumentID: id, BatchName: &batch, FileName: id + ".txt", ContentType: "text/plain", Size: 230, BlobKey: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			&domain.DocumentQueued{Meta: m(d), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1},
			&domain.ProcessingStarted{Meta: m(d), DocumentID: id, Phase: domain.PhaseFull, Attempt: 1, ClaimID: claim, Worker: "w1"},
			&domain.DocumentPreprocessed{Meta: m(d), DocumentID: id, ClaimID: claim, ContentType: "text/plain", Pages: 1, TextChars: 230},
			&domain.DocumentSucceeded{Meta: m(d), DocumentID: id, ClaimID: claim, LineItems: items},
		} {
			v, err := c.Encode(e)
			if err != nil {
				b.Fatal(err)
			}
			vals = append(vals, v)
		}
	}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for _, v := range vals {
			if _, err := c.Decode(v); err != nil {
				b.Fatal(err)
			}
		}
		n += len(vals)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}
