package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// The batch.completed body is written by hand now; it must be exactly the
// bytes json.Marshal gave the map it replaced, since stored bodies are
// signed and a rebuild must match the live views. The names include ones
// that JSON and HTML escape and ones beyond ASCII, which the domain does
// not allow today.
func TestBatchCompletedPayloadMatchesTheMapEncoding(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"b", "batch-2026.12_05", "<&>", "ünï", "x", `q"\\`, "\x01\u2028"}
	for i := range 500 {
		b := domain.NewBatch("org_1", names[i%len(names)])
		for j := range b.Counts {
			if r.IntN(3) > 0 {
				b.Counts[j] = r.IntN(1000)
			}
			b.Documents += b.Counts[j]
		}
		at := time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("x", 3600))
		completed := at.Add(-time.Duration(r.Int64N(1e12)))
		if i%7 == 0 {
			completed = time.Time{}
		}
		got := batchCompletedPayload(b, at, completed)
		want := mapPayload(t, b, at, completed)
		if !bytes.Equal(got, want) {
			t.Fatalf("batch %+v:\n got %s\nwant %s", b, got, want)
		}
	}
}

// mapPayload is how batchDone built the body before it was a struct.
func mapPayload(t *testing.T, b domain.Batch, at, completed time.Time) []byte {
	t.Helper()
	counts := map[domain.Public]int{}
	for _, p := range domain.PublicStatuses {
		if n := b.Counts.Of(p); n != 0 {
			counts[p] = n
		}
	}
	out, err := json.Marshal(map[string]any{
		"type":      "batch.completed",
		"timestamp": at.UTC().Format(time.RFC3339Nano),
		"data": map[string]any{
			"batch_name": b.Name, "status": b.Status(), "total": b.Documents,
			"counts": counts, "completed_at": completed.UTC().Format(time.RFC3339Nano),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkBatchCompletedPayload builds the body of one batch.completed
// notification, as every batch that completes does while applying.
func BenchmarkBatchCompletedPayload(b *testing.B) {
	bt := domain.NewBatch("org_06h4tc9tqvrt28y5jknt600y8m", "bench-06h4tc9tqvrt28y5jknt600y8m")
	bt.Counts.Set(domain.PublicSucceeded, 1)
	bt.Documents = 1
	at := time.Now()
	for b.Loop() {
		batchCompletedPayload(bt, at, at)
	}
}

// TestBatchCompletedNotificationIDIsStable: a batch.completed
// notification's id is public (receivers deduplicate by it) and is derived
// from the batch and the position of the event that completed it, as
// fmt's "%s/%s/%d/%d" wrote them; building that seed by hand must not
// change a single id.
func TestBatchCompletedNotificationIDIsStable(t *testing.T) {
	t.Parallel()
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, fetch := range pipelineLog(t) {
		for _, rec := range fetch {
			if err := v.ApplyRecords([]eventstore.Record{rec}); err != nil {
				t.Fatal(err)
			}
			ns, err := v.BatchNotifications("o1", "b1")
			if err != nil {
				t.Fatal(err)
			}
			if len(ns) == 0 {
				continue
			}
			sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d/%d", "o1", "b1", rec.Partition, rec.Offset))
			if want := "msg_" + hex.EncodeToString(sum[:13]); ns[0].ID != want {
				t.Fatalf("completed at %d/%d: id %s, want %s", rec.Partition, rec.Offset, ns[0].ID, want)
			}
			return
		}
	}
	t.Fatal("the log never completed b1")
}
