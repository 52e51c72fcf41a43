package projections

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// Tx is one event's view changes, within its fetch's: a projection reads
// its fetch's earlier writes from the fetch's maps, or from its batch once
// that has an index (fetchBatch).
type Tx struct {
	fb    *fetchBatch
	rec   eventstore.Record
	views *Views
	// refused is set when a fold refused the event (a no-op), so it shaped
	// nothing.
	refused bool
	// doc is the document as the event left it, for the projections that
	// run after the document projection (history), which would otherwise
	// decode it again.
	doc *domain.Document
	// written is shared by every Tx of one fetch: the latest value of each
	// key the fetch read or wrote (nil: absent). An indexed batch answers a
	// Get by walking every version of the key written in the batch, so the
	// keys that many events of a fetch rewrite (a batch's summary, the
	// per-status counts) cost O(events) per read; the map makes it O(1),
	// and lets most fetches do without the index (fetchBatch). Every write
	// goes through set and del so that it stays true; the untracked
	// families (keyfilter.go) are left out (remember).
	written map[string][]byte
	// objects is shared by every Tx of one fetch: the decoded documents,
	// batches and jobs it read or changed (cache.go); nil outside a fetch.
	objects fetchObjects
	// history is shared by every Tx of one fetch: the entities its events
	// shaped (history.go).
	history *historyLog
	// recIndex is rec's place in the fetch's applied records.
	recIndex int
	// counts is shared by every Tx of one fetch: its changes to the
	// per-status counts (phase.go).
	counts countDeltas
	// due is shared by every Tx of one fetch: the earliest due time it
	// wrote per partition, for the due index's floors (due.go).
	due map[int32]int64
	// endpointsWritten is shared by every Tx of one fetch: the orgs whose
	// webhook endpoints it wrote (endpoint.go).
	endpointsWritten map[string]bool
}

// getRaw reads key through the fetch's map; found is false when absent.
func (tx *Tx) getRaw(key []byte) (val []byte, found bool, err error) {
	if v, ok := tx.written[string(key)]; ok {
		return v, v != nil, nil
	}
	if v, ok := tx.fb.prevWritten(key); ok {
		tx.remember(key, v)
		return v, v != nil, nil
	}
	if tx.views.written.absent(key) {
		tx.remember(key, nil)
		return nil, false, nil
	}
	r := tx.fb.reader()
	if untracked(key) && !isCountKey(key) {
		// Not in written even if this fetch wrote it.
		if r, err = tx.fb.indexed(); err != nil {
			return nil, false, err
		}
	}
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		tx.remember(key, nil)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("projections: get %q: %w", key, err)
	}
	val = append([]byte{}, v...)
	closer.Close()
	tx.remember(key, val)
	return val, true, nil
}

func (tx *Tx) remember(key, val []byte) {
	// The history index is written, never read back while applying; a read
	// of it would still find it in the batch.
	if tx.written != nil && !untracked(key) {
		tx.written[string(key)] = val
	}
}

// set writes key; a nil val (an index entry) is stored as empty.
func (tx *Tx) set(key, val []byte) error {
	if val == nil {
		val = []byte{}
	}
	if err := tx.fb.b.Set(key, val, nil); err != nil {
		return fmt.Errorf("projections: set %q: %w", key, err)
	}
	tx.endpointWritten(key)
	// A key this fetch read as present, or wrote already, is in the key
	// filter: adding it again would count it again, and the filter sizes
	// its stages and its limit by what it counts (keyfilter.go).
	if old, ok := tx.written[string(key)]; !ok || old == nil {
		tx.views.written.add(key)
	}
	tx.remember(key, val)
	return nil
}

// noop records that the fold refused the current event.
func (tx *Tx) noop(err error) {
	tx.refused = true
	tx.views.noops.Add(1)
	tx.views.log.Debug().Err(err).Str("type", tx.rec.Event.Type()).Str("org", tx.rec.Event.Header().OrgID).
		Str("document", domain.DocumentIDOf(tx.rec.Event)).
		Int32("partition", tx.rec.Partition).Int64("offset", tx.rec.Offset).Msg("recorded no-op")
}

// getView loads key into v; found is false when the key is absent.
func getView(r pebble.Reader, key []byte, v any) (bool, error) {
	val, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("projections: get %q: %w", key, err)
	}
	defer closer.Close()
	if err := decodeView(val, v); err != nil {
		return false, fmt.Errorf("projections: decode %q: %w", key, err)
	}
	return true, nil
}

func (tx *Tx) get(key []byte, v any) (bool, error) {
	if tx.objects != nil && deferredKey(key) {
		return tx.getObject(key, v)
	}
	val, found, err := tx.getRaw(key)
	if err != nil || !found {
		return false, err
	}
	if err := decodeView(val, v); err != nil {
		return false, fmt.Errorf("projections: decode %q: %w", key, err)
	}
	return true, nil
}

// getObject reads a deferred view into v.
func (tx *Tx) getObject(key []byte, v any) (bool, error) {
	val, err := tx.object(key, func() (any, bool, error) {
		found, err := getView(tx.fb.reader(), key, v)
		if err != nil || !found {
			return nil, false, err
		}
		return valueOf(v), true, nil
	})
	if err != nil {
		return false, err
	}
	return assign(v, val), nil
}

// object is a deferred view's decoded value, nil when absent: from the
// fetch, from the object cache, or from Pebble through load (decoded once,
// then kept).
func (tx *Tx) object(key []byte, load func() (val any, found bool, err error)) (any, error) {
	if o, ok := tx.objects[string(key)]; ok {
		return o.val, nil
	}
	if val, ok := tx.views.cache.get(key); ok {
		tx.objects[string(key)] = &object{val: val, stored: val != nil}
		return val, nil
	}
	// The cache took the fetch before's views, but may have dropped some
	// since; Pebble has them only once that fetch commits.
	if o, ok := tx.fb.prevObject(key); ok {
		tx.objects[string(key)] = &object{val: o.val, stored: o.val != nil}
		return o.val, nil
	}
	o := &object{}
	if !tx.views.written.absent(key) {
		val, found, err := load()
		if err != nil {
			return nil, err
		}
		o.val, o.stored = val, found
	}
	tx.objects[string(key)] = o
	return o.val, nil
}

// putObject makes val the fetch's value of the deferred view at key, to be
// written when the fetch commits.
//
// An object the fetch holds already is changed in place: no one else holds
// it until the fold ends (the next fetch copies what it reads of it, and
// the cache keeps values, not objects), and a new object and key per write
// were a sixth of what the fold allocated.
func (tx *Tx) putObject(key []byte, val any) {
	if o := tx.objects[string(key)]; o != nil {
		o.val, o.dirty = val, true
		return
	}
	tx.objects[string(key)] = &object{val: val, dirty: true}
}

// shared are the views kept in the fetch and the object cache as pointers
// (cache.go): those the fold reads and rewrites on most events.
type shared interface{ domain.Document | domain.Batch }

// getShared reads the view at key, nil when absent. The result may be
// shared with the fetch and the object cache: it must not be changed.
func getShared[T shared](tx *Tx, key []byte) (*T, error) {
	if tx.objects == nil {
		v := new(T)
		found, err := tx.get(key, v)
		if err != nil || !found {
			return nil, err
		}
		return v, nil
	}
	val, err := tx.object(key, func() (any, bool, error) {
		v := new(T)
		found, err := getView(tx.fb.reader(), key, v)
		if err != nil || !found {
			return nil, false, err
		}
		return v, true, nil
	})
	v, _ := val.(*T)
	return v, err
}

// putShared writes v at key, keeping the pointer: the caller must not
// change *v afterwards.
func putShared[T shared](tx *Tx, key []byte, v *T) error {
	if tx.objects == nil {
		return tx.put(key, v)
	}
	tx.putObject(key, v)
	return nil
}

func (tx *Tx) put(key []byte, v any) error {
	if tx.objects != nil && deferredKey(key) {
		tx.putObject(key, valueOf(v))
		return nil
	}
	val, err := encodeView(v)
	if err != nil {
		return fmt.Errorf("projections: encode %q: %w", key, err)
	}
	return tx.set(key, val)
}

func (tx *Tx) del(key []byte) error {
	if err := tx.fb.b.Delete(key, nil); err != nil {
		return fmt.Errorf("projections: delete %q: %w", key, err)
	}
	tx.endpointWritten(key)
	tx.remember(key, nil)
	if tx.objects != nil && deferredKey(key) {
		tx.objects[string(key)] = &object{} // absent, and the delete is in the batch
	}
	return nil
}

// scan is scan over the views as this fetch has changed them so far.
func (tx *Tx) scan(prefix, from []byte, fn func(k, v []byte) (bool, error)) error {
	r, err := tx.fb.indexed()
	if err != nil {
		return err
	}
	return scan(r, prefix, from, fn)
}

// scan calls fn for each key under prefix, in order, until fn returns false.
func scan(r pebble.Reader, prefix, from []byte, fn func(k, v []byte) (bool, error)) error {
	lower := prefix
	if from != nil {
		lower = from
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("projections: iterate: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		more, err := fn(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if !more {
			break
		}
	}
	return it.Close()
}

// encodeView is a view's stored value: documents in their binary encoding
// (doccodec.go), batches, webhook notifications, Idempotency-Key records
// and batch webhooks in theirs (batchcodec.go, notifcodec.go,
// idemcodec.go, hookcodec.go), everything else JSON.
func encodeView(v any) ([]byte, error) {
	switch d := v.(type) {
	case domain.Document:
		return encodeDocument(&d), nil
	case *domain.Document:
		return encodeDocument(d), nil
	case domain.Batch:
		return encodeBatch(&d), nil
	case *domain.Batch:
		return encodeBatch(d), nil
	case domain.Notification:
		return encodeNotification(&d), nil
	case *domain.Notification:
		return encodeNotification(d), nil
	case domain.Idempotency:
		return encodeIdempotency(&d), nil
	case *domain.Idempotency:
		return encodeIdempotency(d), nil
	case BatchWebhook:
		return encodeBatchWebhook(&d), nil
	case *BatchWebhook:
		return encodeBatchWebhook(d), nil
	}
	return json.Marshal(v)
}

// decodeView reads what encodeView wrote into out, a pointer.
func decodeView(v []byte, out any) error {
	var err error
	switch d := out.(type) {
	case *domain.Document:
		err = decodeDocument(v, d)
	case *domain.Batch:
		err = decodeBatch(v, d)
	case *domain.Notification:
		err = decodeNotification(v, d)
	case *domain.Idempotency:
		err = decodeIdempotency(v, d)
	case *BatchWebhook:
		err = decodeBatchWebhook(v, d)
	default:
		err = json.Unmarshal(v, out)
	}
	if err != nil {
		return fmt.Errorf("projections: decode: %w", err)
	}
	return nil
}
