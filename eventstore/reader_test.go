package eventstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// TestReaderFromOffsets appends events before and after the reader's start
// offsets, plus records that are not events, and checks that the reader
// returns exactly the records from its offsets on, decoded, with the
// undecodable ones flagged rather than stopping it.
func TestReaderFromOffsets(t *testing.T) {
	t.Parallel()
	s, seeds := setup(t)
	ctx := testCtx(t)

	orgs := orgsByPartition(t, s, "org")
	all := map[eventstore.Position]domain.Event{}
	appendRound := func(first, count int) []eventstore.Position {
		var events []domain.Event
		for _, org := range orgs {
			for n := first; n < first+count; n++ {
				events = append(events, sampleEvent(org, n))
			}
		}
		pos := appendOK(t, s, events...)
		for i, p := range pos {
			all[p] = events[i]
		}
		return pos
	}

	first := appendRound(0, 3)
	from, err := s.EndOffsets(ctx)
	if err != nil {
		t.Fatalf("EndOffsets: %v", err)
	}
	// One partition starts in the middle of the first round: at the
	// second event of its org.
	mid := first[1]
	from[mid.Partition] = mid.Offset
	appendRound(3, 2)

	// Records that are not events, produced straight to the topic into one
	// org's partition, with events of that org after them.
	garbageOrg := orgs[0]
	gp := s.PartitionFor(garbageOrg)
	valid, err := s.Codec().Encode(sampleEvent(garbageOrg, 50))
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	garbage := []*kgo.Record{
		{Value: []byte("not avro at all")},
		// The single-object marker and a fingerprint no schema has.
		{Value: []byte{0xC3, 0x01, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0x02, 'x'}},
		{Value: nil},
		// A real event cut short.
		{Value: valid[:len(valid)-1]},
	}
	for _, r := range garbage {
		r.Topic, r.Partition, r.Key = s.EventsTopic(), gp, []byte(garbageOrg)
	}
	raw := rawClient(t, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := raw.ProduceSync(ctx, garbage...).FirstErr(); err != nil {
		t.Fatalf("produce garbage: %v", err)
	}
	wantErr := map[eventstore.Position]error{}
	for i, r := range garbage {
		p := eventstore.Position{Partition: r.Partition, Offset: r.Offset}
		wantErr[p] = []error{eventstore.ErrBadEncoding, eventstore.ErrUnknownFingerprint, eventstore.ErrBadEncoding, eventstore.ErrMalformedBody}[i]
	}
	appendRound(5, 2)

	var want int
	for p := range all {
		if p.Offset >= from[p.Partition] {
			want++
		}
	}
	want += len(wantErr)

	r := newReader(t, s, from)
	recs := readN(t, r, want)
	seen := map[eventstore.Position]bool{}
	last := map[int32]int64{}
	var decoded, failed int
	for _, rec := range recs {
		p := rec.Position
		if seen[p] {
			t.Fatalf("record %+v returned twice", p)
		}
		seen[p] = true
		if p.Offset < from[p.Partition] {
			t.Errorf("record %+v is before the start offset %d", p, from[p.Partition])
		}
		if l, ok := last[p.Partition]; ok && p.Offset <= l {
			t.Errorf("record %+v after offset %d: not in log order", p, l)
		}
		last[p.Partition] = p.Offset
		if rec.Timestamp.IsZero() {
			t.Errorf("record %+v has no timestamp", p)
		}
		if werr, ok := wantErr[p]; ok {
			failed++
			if !errors.Is(rec.Err, werr) {
				t.Errorf("garbage record %+v: Err = %v, want %v", p, rec.Err, werr)
			}
			if rec.Event != nil {
				t.Errorf("garbage record %+v: Event = %#v, want nil", p, rec.Event)
			}
			continue
		}
		e, ok := all[p]
		if !ok {
			t.Errorf("record %+v was never appended", p)
			continue
		}
		decoded++
		if rec.Err != nil {
			t.Errorf("record %+v: Err = %v", p, rec.Err)
		} else if !reflect.DeepEqual(rec.Event, e) {
			t.Errorf("record %+v = %#v, want %#v", p, rec.Event, e)
		}
	}
	if failed != len(wantErr) || decoded+failed != want {
		t.Errorf("read %d events and %d undecodable records, want %d and %d", decoded, failed, want-len(wantErr), len(wantErr))
	}

	// Nothing else is pending: one more event per partition is exactly
	// what comes next.
	sentinels := map[eventstore.Position]bool{}
	for _, org := range orgs {
		sentinels[appendOK(t, s, sampleEvent(org, 99))[0]] = true
	}
	for _, rec := range readN(t, r, len(sentinels)) {
		if !sentinels[rec.Position] {
			t.Errorf("after the expected records, got %+v (%v), want only the sentinels", rec.Position, rec.Event)
		}
	}
}

// TestReaderSomePartitions reads one partition: the others are not read.
func TestReaderSomePartitions(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)

	orgs := orgsByPartition(t, s, "org")
	var events []domain.Event
	for _, org := range orgs {
		events = append(events, sampleEvent(org, 0), sampleEvent(org, 1))
	}
	pos := appendOK(t, s, events...)
	only := pos[0].Partition

	r := newReader(t, s, map[int32]int64{only: 0})
	for i, rec := range readN(t, r, 2) {
		if rec.Partition != only || rec.Offset != int64(i) {
			t.Errorf("record %d at %+v, want partition %d offset %d", i, rec.Position, only, i)
		}
	}
	// Sentinels in every partition, the read partition's last: the next
	// record is the read partition's.
	var sentinel eventstore.Position
	for p, org := range orgs {
		if p != only {
			appendOK(t, s, sampleEvent(org, 2))
		}
	}
	sentinel = appendOK(t, s, sampleEvent(orgs[only], 2))[0]
	rec := readN(t, r, 1)[0]
	if rec.Position != sentinel {
		t.Errorf("next record at %+v, want %+v", rec.Position, sentinel)
	}
}

// TestReaderPollEndsWithContext: Poll on a quiet partition returns the
// context's error when it ends.
func TestReaderPollEndsWithContext(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	r := newReader(t, s, fromStart(s))
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	recs, err := r.Poll(ctx, 0)
	if !errors.Is(err, context.DeadlineExceeded) || recs != nil {
		t.Errorf("Poll on empty topic = %v, %v; want nil, context.DeadlineExceeded", recs, err)
	}
}
