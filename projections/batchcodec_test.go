package projections

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

func filledBatch() domain.Batch {
	var b domain.Batch
	n := 0
	fill(reflect.ValueOf(&b).Elem(), &n)
	return b
}

// TestBatchCodecCoversEveryField round-trips a batch with every field set,
// so a field added to domain.Batch without the codec fails here.
func TestBatchCodecCoversEveryField(t *testing.T) {
	t.Parallel()
	for _, b := range []domain.Batch{filledBatch(), {OrgID: "o", Name: "n"}, domain.NewBatch("o", "n")} {
		var got domain.Batch
		if err := decodeBatch(encodeBatch(&b), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, b) {
			t.Fatalf("round trip lost something:\n got %#v\nwant %#v", got, b)
		}
	}
}

// TestBatchCodecIsDeterministic: the counts are a map, and a rebuild must
// write the bytes the live fold wrote (invariant 4), whatever order the
// map is walked in.
func TestBatchCodecIsDeterministic(t *testing.T) {
	t.Parallel()
	b := domain.NewBatch("o", "n")
	for i, s := range []domain.Public{domain.PublicQueued, domain.PublicProcessing, domain.PublicSucceeded, "failed", "canceled"} {
		b.Counts[s] = i + 1
	}
	b.CreatedAt = time.Date(2026, 12, 4, 17, 0, 0, 5, time.UTC)
	want := string(encodeBatch(&b))
	for i := range 50 {
		if got := string(encodeBatch(&b)); got != want {
			t.Fatalf("encoding %d differs from the first", i)
		}
	}
}

// TestBatchCodecRefusesBrokenValues: every truncation, bytes left over and
// another version are errors, never a panic or half a batch.
func TestBatchCodecRefusesBrokenValues(t *testing.T) {
	t.Parallel()
	b := filledBatch()
	refusesBroken(t, encodeBatch(&b), func(val []byte) error { return decodeBatch(val, &domain.Batch{}) })
}

// TestMemberKeyLayout: the hand-built key is the documented layout, which
// the membership cursors and the history index rely on.
func TestMemberKeyLayout(t *testing.T) {
	t.Parallel()
	for _, seq := range []int64{0, 1, 0xabc, 1<<40 + 7, 1<<63 - 1} {
		want := fmt.Sprintf("bd/%s/%s/%016x/%s", "org-1", "batch-a", seq, "doc-9")
		if got := string(memberKey("org-1", "batch-a", seq, "doc-9")); got != want {
			t.Fatalf("seq %d: %q, want %q", seq, got, want)
		}
	}
}

// FuzzBatchCodec: whatever the bytes, decoding returns a batch or an error,
// and a batch it returns reads back the same once encoded again.
func FuzzBatchCodec(f *testing.F) {
	b := filledBatch()
	f.Add(encodeBatch(&b))
	nb := domain.NewBatch("o", "n")
	f.Add(encodeBatch(&nb))
	f.Fuzz(func(t *testing.T, val []byte) {
		var got domain.Batch
		if err := decodeBatch(val, &got); err != nil {
			return
		}
		var back domain.Batch
		if err := decodeBatch(encodeBatch(&got), &back); err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("re-encoded batch reads back differently: %v", err)
		}
	})
}
