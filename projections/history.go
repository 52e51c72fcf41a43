package projections

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// HistoryKind names the kind of entity a history belongs to.
type HistoryKind string

// The entities that have a history.
const (
	HistoryDocument HistoryKind = "d"
	HistoryBatch    HistoryKind = "b"
	HistoryJob      HistoryKind = "j"
)

// ErrBadCursor is returned for a history cursor this package did not make.
var ErrBadCursor = errors.New("projections: malformed cursor")

// historyProjection indexes every event under each entity it shaped, so
// that GET .../history and time travel read Pebble, never the broker:
//
//	h/<kind>/<org>/<id>/<partition u32><window u64>   positions, 12 bytes each
//	he/<partition u32><window u64>                     the events, single-object encoded (appendCopy)
//
// An entity's index is one value per window of historyWindow offsets of
// its partition: the positions of its events in that window, in log order,
// appended with Pebble's Merge (the default merger concatenates). A fetch
// merges once per entity and window, however many of the entity's events
// it holds, so a document's whole lifecycle usually costs one index write
// instead of one key per event (which was more than half of the keys the
// views wrote, and of what Pebble flushed and compacted). The value depends
// only on the log, never on where fetches happened to end, so a rebuild
// still reads back byte for byte what the live views hold (invariant 4);
// a window bounds a value to historyWindow positions. The events' copies
// are kept much the same way, one value per partition and window of
// copiesWindow offsets, compressed once the views applied past it
// (copies.go).
//
// Webhook delivery attempts and redelivery requests count for the entity
// their notification is about. An event is stored once however many
// entities it shaped. Events the fold
// refused (no-ops) shaped nothing and are not indexed. The value is the
// event in the current schema: the record's own bytes when it was written
// with that schema (most are; encoding again cost a tenth of the apply
// path), else the event encoded again, which is deterministic. Either way
// a rebuild, reading the same records, writes the same bytes.
type historyProjection struct{}

// historyCodec encodes the stored events; built once, on first use.
var historyCodec = sync.OnceValues(eventstore.NewCodec)

const posLen = 12 // partition u32 + offset u64

// historyWindow is how many offsets of a partition one index value covers:
// 16384, so a value holds at most 192 KiB of positions (an entity that is
// every event of its window), and a page of history reads one or two.
const historyWindow = 1 << 14

// historyIndexKey is the index value of an entity that holds position p/o.
func historyIndexKey(kind HistoryKind, org, id string, p int32, o int64) []byte {
	return appendHistoryIndexKey(nil, kind, org, id, p, o)
}

// appendHistoryIndexKey appends historyIndexKey's key to k.
func appendHistoryIndexKey(k []byte, kind HistoryKind, org, id string, p int32, o int64) []byte {
	return appendPos(appendHistoryPrefix(k, kind, org, id), p, o&^(historyWindow-1))
}

func appendPos(k []byte, p int32, o int64) []byte {
	k = binary.BigEndian.AppendUint32(k, uint32(p))
	return binary.BigEndian.AppendUint64(k, uint64(o))
}

// historyPrefix is the prefix of every index value of an entity.
func historyPrefix(kind HistoryKind, org, id string) []byte {
	return appendHistoryPrefix(nil, kind, org, id)
}

func appendHistoryPrefix(k []byte, kind HistoryKind, org, id string) []byte {
	return append(append(append(append(append(append(append(k, "h/"...), kind...), '/'), org...), '/'), id...), '/')
}

// shaped is one entity an event shaped.
type shaped struct {
	kind HistoryKind
	id   string
}

// before runs ahead of the other projections, for what they are about to
// forget: the documents a BatchDeleted cancels or detaches (their batch
// membership is dropped by the delete).
func (historyProjection) before(tx *Tx) ([]shaped, error) {
	ev, ok := tx.rec.Event.(*domain.BatchDeleted)
	if !ok {
		return nil, nil
	}
	org := ev.Meta.OrgID
	var out []shaped
	err := tx.scan(memberPrefix(org, ev.BatchName), nil, func(k, _ []byte) (bool, error) {
		var d domain.Document
		if _, err := tx.get(docKey(org, memberDoc(k)), &d); err != nil {
			return false, err
		}
		if _, err := d.Apply(ev); err == nil {
			out = append(out, shaped{HistoryDocument, d.ID})
		}
		return true, nil
	})
	return out, err
}

// after indexes the current event under every entity it shaped, given what
// before found and the views as the other projections left them.
func (historyProjection) after(tx *Tx, pre []shaped) error {
	if tx.refused {
		return nil
	}
	ev := tx.rec.Event
	org := ev.Header().OrgID
	// Room for what most events shape (a document, its batch, a job)
	// without growing a slice on the heap per event.
	var room [4]shaped
	out := append(room[:0], pre...)
	switch e := ev.(type) {
	case *domain.BatchDeleted:
		out = append(out, shaped{HistoryBatch, e.BatchName})
	case *domain.BatchWebhookSet:
		out = append(out, shaped{HistoryBatch, e.BatchName})
	case *domain.BatchWebhookRemoved:
		out = append(out, shaped{HistoryBatch, e.BatchName})
	case *domain.WebhookDeliveryAttempted:
		s, err := notificationSubject(tx, org, e.NotificationID)
		if err != nil {
			return err
		}
		out = append(out, s...)
	case *domain.WebhookRedeliveryRequested:
		s, err := notificationSubject(tx, org, e.NotificationID)
		if err != nil {
			return err
		}
		out = append(out, s...)
	}
	if id := domain.JobIDOf(ev); id != "" {
		out = append(out, shaped{HistoryJob, id})
	}
	if id := domain.DocumentIDOf(ev); id != "" && tx.doc != nil {
		d := tx.doc
		out = append(out, shaped{HistoryDocument, id})
		// The batch and job projections follow the same rules: a deleted
		// batch no longer tracks its documents, and a job moves only with
		// a run that names it.
		if d.BatchName != "" && !d.BatchDeleted {
			out = append(out, shaped{HistoryBatch, d.BatchName})
		}
		for _, job := range d.JobIDs {
			_, found, err := tx.getRaw(docJobKey(org, id, job))
			if err != nil {
				return err
			}
			if found {
				out = append(out, shaped{HistoryJob, job})
			}
		}
	}
	tx.history.note(tx.recIndex, out)
	return nil
}

// historyLog is one fetch's history as its fold found it: the entities
// each event shaped. The goroutine that commits the fetch turns it into
// the events' copies and the index (write), beside the next fold
// (Pipeline): keying and grouping the index were a sixth of the fold.
type historyLog struct {
	events []loggedEvent
	shapes []shaped
	// spans are the offsets the fetch applied of each partition: which
	// windows of copies it seals (copies.go).
	spans map[int32]offsetSpan
}

// newHistoryLog sizes a fetch's log for n records, most of which shape a
// document and its batch.
func newHistoryLog(n int) *historyLog {
	return &historyLog{events: make([]loggedEvent, 0, n), shapes: make([]shaped, 0, 2*n), spans: map[int32]offsetSpan{}}
}

// loggedEvent is one event of the fetch and its entities in shapes.
type loggedEvent struct {
	rec      int // in the fetch's applied records
	from, to int
}

// note records the entities the fetch's rec-th applied record shaped.
func (h *historyLog) note(rec int, shapes []shaped) {
	if len(shapes) == 0 {
		return
	}
	from := len(h.shapes)
	h.shapes = append(h.shapes, shapes...)
	h.events = append(h.events, loggedEvent{rec: rec, from: from, to: len(h.shapes)})
}

// write writes the copies of the logged events (copyWriter) and merges
// the fetch's additions to the index into b; db holds every fetch before
// this one. The copy is the event in the current schema: the record's own
// bytes when it was written with that schema (most are; encoding again
// cost a tenth of the apply path), else the event encoded again, which is
// deterministic.
func (h *historyLog) write(db pebble.Reader, applied []eventstore.Record, b *pebble.Batch) error {
	copies := newCopyWriter(db, b, h.spans)
	if len(h.events) == 0 {
		return copies.finish() // it may still seal a window
	}
	codec, err := historyCodec()
	if err != nil {
		return err
	}
	index := historyIndex{at: make(map[string]int, len(h.events)/2)}
	// Keys are built in arrays on the stack: the batch and the index copy
	// what they keep.
	var pos [posLen]byte
	var ik [128]byte
	for _, e := range h.events {
		rec := &applied[e.rec]
		val := rec.Value
		if !codec.IsCurrent(val, rec.Event.Type()) {
			if val, err = codec.Encode(rec.Event); err != nil {
				return fmt.Errorf("projections: history of %d/%d: %w", rec.Partition, rec.Offset, err)
			}
		}
		p, o := rec.Partition, rec.Offset
		if err := copies.add(p, o, val); err != nil {
			return err
		}
		org := rec.Event.Header().OrgID
		for _, s := range h.shapes[e.from:e.to] {
			index.add(appendHistoryIndexKey(ik[:0], s.kind, org, s.id, p, o), appendPos(pos[:0], p, o))
		}
	}
	if err := copies.finish(); err != nil {
		return err
	}
	return index.flush(b)
}

// historyIndex is one fetch's additions to the history index: positions
// by index key, in the order the fetch first named each key, merged into
// the batch when the fetch commits. A key is made a string once, when the
// fetch first names it (a map of keys to positions made one per event).
type historyIndex struct {
	at      map[string]int // key -> entries
	entries []historyEntry
}

type historyEntry struct {
	key       string
	positions []byte
}

// add appends pos under key once: an event can name an entity twice (a
// deleted batch's document is found both before and after the delete).
// Neither key nor pos is kept.
func (h *historyIndex) add(key, pos []byte) {
	if i, ok := h.at[string(key)]; ok {
		cur := h.entries[i].positions
		if len(cur) >= posLen && string(cur[len(cur)-posLen:]) == string(pos) {
			return
		}
		h.entries[i].positions = append(cur, pos...)
		return
	}
	if h.at == nil {
		h.at = map[string]int{}
	}
	k := string(key)
	h.at[k] = len(h.entries)
	h.entries = append(h.entries, historyEntry{key: k, positions: append(make([]byte, 0, 2*posLen), pos...)})
}

// flush merges the fetch's positions into b.
func (h *historyIndex) flush(b *pebble.Batch) error {
	for _, e := range h.entries {
		if err := b.Merge([]byte(e.key), e.positions, nil); err != nil {
			return fmt.Errorf("projections: history: %w", err)
		}
	}
	return nil
}

// historyMarker says the views have indexed history since offset 0, and
// in which layout: historyFormat.
var historyMarker = []byte("meta/history")

// historyFormat is the layout of the views. 1 had a history key per event
// and entity, and JSON documents; 2 has an index value per entity and
// window (historyProjection) and binary documents (doccodec.go); 3 also
// binary batches (batchcodec.go); 4 also binary webhook notifications
// (notifcodec.go); 5 also binary Idempotency-Key records and batch
// webhooks (idemcodec.go, hookcodec.go); 6 keeps the events' copies in
// windows of copiesWindow offsets, not a key each; 7 compresses the
// windows the views have applied past (copies.go).
const historyFormat = "7"

// ensureHistory starts views that predate the history index, or hold it in
// an older layout, again from offset 0: they are a cache of the log, and a
// history that silently lacks the older events would be wrong. It returns
// the offsets to use.
func (v *Views) ensureHistory(applied map[int32]int64) (map[int32]int64, error) {
	val, closer, err := v.db.Get(historyMarker)
	if err == nil {
		current := string(val) == historyFormat
		closer.Close()
		if current {
			return applied, nil
		}
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("projections: %w", err)
	}
	b := v.db.NewBatch()
	defer b.Close()
	if len(applied) > 0 {
		v.log.Warn().Msg("projections: views predate the current history index; rebuilding them from the log")
		// From 0x00, not the empty key: Pebble's invariant checks (race
		// builds) reject iterating a tombstone that starts at the empty key.
		if err := b.DeleteRange([]byte{0}, []byte{0xff}, nil); err != nil {
			return nil, fmt.Errorf("projections: %w", err)
		}
	}
	if err := b.Set(historyMarker, []byte(historyFormat), nil); err != nil {
		return nil, fmt.Errorf("projections: %w", err)
	}
	if err := v.commitDurable(b); err != nil {
		return nil, fmt.Errorf("projections: %w", err)
	}
	return map[int32]int64{}, nil
}

// notificationSubject is the entity a webhook notification is about: a
// batch, a document's preprocess run, or a job.
func notificationSubject(tx *Tx, org, id string) ([]shaped, error) {
	var n domain.Notification
	found, err := tx.get(notifKey(org, id), &n)
	switch {
	case err != nil || !found:
		return nil, err
	case !n.Endpoint:
		return []shaped{{HistoryBatch, n.Target}}, nil
	case n.DocumentID != "":
		return []shaped{{HistoryDocument, n.DocumentID}}, nil
	case n.JobID != "":
		return []shaped{{HistoryJob, n.JobID}}, nil
	}
	return nil, nil
}

// HistoryEntry is one event of an entity's history at its log position.
type HistoryEntry struct {
	eventstore.Position
	Event domain.Event
}

// History pages through the events that shaped an entity of org, in log
// order: at most limit, after cursor ("" starts at the beginning). next is
// the cursor of the following page, "" at the end. Cursors are opaque; one
// this package did not make is ErrBadCursor. An entity with no history has
// an empty one, not ErrNotFound.
func (v *Views) History(kind HistoryKind, org, id, cursor string, limit int) (out []HistoryEntry, next string, err error) {
	limit = max(limit, 1)
	prefix := historyPrefix(kind, org, id)
	var from, after []byte
	if cursor != "" {
		if len(cursor) != posLen {
			return nil, "", ErrBadCursor
		}
		after = []byte(cursor)
		p, o := splitPos(after)
		from = historyIndexKey(kind, org, id, p, o)
	}
	r := copiesReader{db: v.db}
	err = scanPositions(v.db, prefix, from, func(pos []byte) (bool, error) {
		if after != nil && string(pos) <= string(after) {
			return true, nil
		}
		if len(out) == limit {
			last := out[len(out)-1]
			next = string(appendPos(nil, last.Partition, last.Offset))
			return false, nil
		}
		e, err := r.event(pos)
		if err != nil {
			return false, err
		}
		out = append(out, e)
		return true, nil
	})
	return out, next, err
}

// fullHistory returns every event of an entity, in log order.
func (v *Views) fullHistory(kind HistoryKind, org, id string) ([]HistoryEntry, error) {
	var out []HistoryEntry
	r := copiesReader{db: v.db}
	err := scanPositions(v.db, historyPrefix(kind, org, id), nil, func(pos []byte) (bool, error) {
		e, err := r.event(pos)
		out = append(out, e)
		return err == nil, err
	})
	return out, err
}

// scanPositions calls fn with each position of an entity's index under
// prefix, from the window key from (nil: the first), in log order, until
// fn returns false.
func scanPositions(r pebble.Reader, prefix, from []byte, fn func(pos []byte) (bool, error)) error {
	return scan(r, prefix, from, func(k, val []byte) (bool, error) {
		if len(k) != len(prefix)+posLen || len(val)%posLen != 0 {
			return false, fmt.Errorf("projections: history index %q: a %d-byte value", k, len(val))
		}
		for i := 0; i < len(val); i += posLen {
			if more, err := fn(val[i : i+posLen]); err != nil || !more {
				return false, err
			}
		}
		return true, nil
	})
}

func splitPos(pos []byte) (int32, int64) {
	return int32(binary.BigEndian.Uint32(pos)), int64(binary.BigEndian.Uint64(pos[4:]))
}

// event reads and decodes the event at pos.
func (r *copiesReader) event(pos []byte) (HistoryEntry, error) {
	if len(pos) != posLen {
		return HistoryEntry{}, fmt.Errorf("projections: history key with a %d-byte position", len(pos))
	}
	p, o := splitPos(pos)
	e := HistoryEntry{Position: eventstore.Position{Partition: p, Offset: o}}
	val, err := r.copy(p, o)
	if err != nil {
		return e, fmt.Errorf("projections: history event %d/%d: %w", p, o, err)
	}
	codec, err := historyCodec()
	if err != nil {
		return e, err
	}
	if e.Event, err = codec.Decode(val); err != nil {
		return e, fmt.Errorf("projections: history event %d/%d: %w", p, o, err)
	}
	return e, nil
}

// mergeHistories merges histories into one, in log order, each event once.
func mergeHistories(hs ...[]HistoryEntry) []HistoryEntry {
	var all []HistoryEntry
	for _, h := range hs {
		all = append(all, h...)
	}
	slices.SortFunc(all, func(a, b HistoryEntry) int {
		if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	return slices.CompactFunc(all, func(a, b HistoryEntry) bool { return a.Position == b.Position })
}
