package projections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// TestBatchCodecCoversEveryField round-trips a batch with every field set,
// so a field added to domain.Batch without the codec fails here.
func TestBatchCodecCoversEveryField(t *testing.T) {
	t.Parallel()
	roundTrips(t, encodeBatch, decodeBatch, filled[domain.Batch](), domain.Batch{OrgID: "o", Name: "n"}, domain.NewBatch("o", "n"))
}

// TestBatchCodecReadsMapEncodedViews: until 2026-12-05 the counts were a
// map, written as its entries in the order of their names, and a batch
// without counts as 0. Views written then read back the same, and the
// array encodes to the same bytes, so a rebuild by this version matches
// live views written by the last (invariant 4).
func TestBatchCodecReadsMapEncodedViews(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 17, 0, 0, 5, time.UTC)
	old := []byte{batchCodecVersion}
	old = appendStrings(old, "o", "n")
	old = binary.AppendVarint(old, 6)
	old = appendCount(old, 3, false)
	for _, e := range []struct {
		status string
		n      int64
	}{{"canceled", 1}, {"processing", 2}, {"succeeded", 3}} {
		old = appendStrings(old, e.status)
		old = binary.AppendVarint(old, e.n)
	}
	old = appendTimes(old, at, time.Time{}, time.Time{})
	var got domain.Batch
	if err := decodeBatch(old, &got); err != nil {
		t.Fatal(err)
	}
	want := domain.Batch{OrgID: "o", Name: "n", Documents: 6, CreatedAt: at}
	want.Counts.Set(domain.PublicCanceled, 1)
	want.Counts.Set(domain.PublicProcessing, 2)
	want.Counts.Set(domain.PublicSucceeded, 3)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	if !bytes.Equal(encodeBatch(&got), old) {
		t.Fatalf("encoded again: %x, want the map encoding %x", encodeBatch(&got), old)
	}

	empty := appendStrings([]byte{batchCodecVersion}, "o", "n")
	empty = binary.AppendVarint(empty, 0)
	nilCounts := appendTimes(appendCount(slices.Clone(empty), 0, true), time.Time{}, time.Time{}, time.Time{})
	if err := decodeBatch(nilCounts, &got); err != nil || got != (domain.Batch{OrgID: "o", Name: "n"}) {
		t.Fatalf("a batch without counts read as %+v, %v", got, err)
	}
	unknown := appendStrings(appendCount(slices.Clone(empty), 1, false), "paused")
	unknown = appendTimes(binary.AppendVarint(unknown, 1), time.Time{}, time.Time{}, time.Time{})
	if err := decodeBatch(unknown, &got); !errors.Is(err, errViewCodec) {
		t.Fatalf("a count of a status outside the vocabulary: %v, want errViewCodec", err)
	}
}

// TestBatchCodecRefusesBrokenValues: every truncation, bytes left over and
// another version are errors, never a panic or half a batch.
func TestBatchCodecRefusesBrokenValues(t *testing.T) {
	t.Parallel()
	b := filled[domain.Batch]()
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
	b := filled[domain.Batch]()
	f.Add(encodeBatch(&b))
	nb := domain.NewBatch("o", "n")
	f.Add(encodeBatch(&nb))
	fuzzReadsBack(f, encodeBatch, decodeBatch)
}
