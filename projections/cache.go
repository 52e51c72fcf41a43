package projections

import (
	"fmt"
	"reflect"

	"github.com/cockroachdb/pebble/v2"

	"github.com/docket/docket/domain"
)

// The views most events rewrite — documents, batches and jobs — are kept
// decoded. Within a fetch, every event of a document reads and writes the
// decoded value (fetchObjects); the JSON is encoded once, when the fetch
// commits. Across fetches, the committed values stay decoded in an
// objectCache, so a document whose events span fetches is not read back
// from Pebble and decoded again. Before this, JSON decode and encode were
// about half of the apply path's CPU (BENCHMARKS.md).
//
// Values are shared, not copied: the domain's folds are copy-on-write (they
// clone a slice before changing it and return a new value), so a cached
// value is never changed in place. Documents and batches are kept as
// pointers (every other view as its value): the fold reads and rewrites
// one of each on most events, and boxing a copy of each per read and per
// write (a document is about 400 bytes) was a third of what it allocated.

// deferredKey reports whether key's view is kept decoded and written when
// the fetch commits. Only families that no scan of the apply path reads are
// deferred, since a scan of the batch would miss a value not yet written:
// documents, batches, jobs (d/, b/, j/), and webhook notifications and
// batch webhooks (wn/, bw/), which every delivery attempt and batch
// completion read (their JSON decode was a seventh of the apply path).
func deferredKey(key []byte) bool {
	if len(key) > 2 && key[1] == '/' && (key[0] == 'd' || key[0] == 'b' || key[0] == 'j') {
		return true
	}
	return len(key) > 3 && key[2] == '/' && (key[0] == 'w' && key[1] == 'n' || key[0] == 'b' && key[1] == 'w')
}

// object is one decoded view in a fetch: val is nil when the key is absent,
// dirty when the fetch changed it and has not written it yet, stored when
// the key was in the views when the fetch first read it (so it is in the
// key filter already).
type object struct {
	val    any
	dirty  bool
	stored bool
}

// fetchObjects is one fetch's decoded views, by key.
type fetchObjects map[string]*object

// dirty takes the fetch's changed views, to be encoded into its batch as
// it commits (writeViews), on the goroutine that commits it (Pipeline).
// The values are shared, never changed in place (above), so the next
// fetch may fold over them meanwhile. It adds their new keys to the key
// filter, which belongs to the apply goroutine.
func (f fetchObjects) dirty(filter *keyFilter) []dirtyView {
	var out []dirtyView
	for k, o := range f {
		if !o.dirty {
			continue
		}
		if !o.stored {
			filter.add([]byte(k))
			o.stored = true
		}
		o.dirty = false
		out = append(out, dirtyView{key: k, val: o.val})
	}
	return out
}

// dirtyView is a view a fetch changed, still decoded.
type dirtyView struct {
	key string
	val any
}

// writeViews encodes views into b. Each is encoded into one buffer that
// the batch copies, key and value, into its own (Batch.SetDeferred): a
// fetch's views cost a buffer, not a value and a key each.
func writeViews(b *pebble.Batch, views []dirtyView) error {
	var buf []byte
	for _, d := range views {
		var err error
		if buf, err = appendView(buf[:0], d.val); err != nil {
			return fmt.Errorf("projections: encode %q: %w", d.key, err)
		}
		op := b.SetDeferred(len(d.key), len(buf))
		copy(op.Key, d.key)
		copy(op.Value, buf)
		if err := op.Finish(); err != nil {
			return fmt.Errorf("projections: set %q: %w", d.key, err)
		}
	}
	return nil
}

// appendView appends v's encoding (encodeView's) to b.
func appendView(b []byte, v any) ([]byte, error) {
	switch d := v.(type) {
	case *domain.Document:
		return appendDocument(b, d), nil
	case *domain.Batch:
		return appendBatch(b, d), nil
	}
	val, err := encodeView(v)
	return append(b, val...), err
}

// objectCache keeps committed views decoded across fetches, in two
// generations: lookups that hit the old one move the entry to the current
// one, and when the current one is full the old one is dropped. That keeps
// what is in use (documents in flight) at the cost of two map lookups, with
// memory bounded by twice the generation size. It belongs to the apply
// goroutine.
type objectCache struct {
	size     int // entries per generation; 0 disables the cache
	cur, old map[string]any
}

// DefaultCacheEntries is the decoded views a node keeps per generation of
// its object cache unless WithCacheEntries says otherwise: 4096, room for
// the documents, batches and jobs of a few thousand documents in flight
// (at a few hundred documents a second a lifecycle takes under a second).
const DefaultCacheEntries = 4096

// get takes the key as bytes so that a lookup does not allocate: only an
// entry moved to the current generation needs the key as a string.
func (c *objectCache) get(key []byte) (any, bool) {
	if v, ok := c.cur[string(key)]; ok {
		return v, true
	}
	v, ok := c.old[string(key)]
	if ok {
		c.add(string(key), v)
	}
	return v, ok
}

func (c *objectCache) add(key string, v any) {
	if c.size <= 0 {
		return
	}
	if c.cur == nil || len(c.cur) >= c.size {
		c.old, c.cur = c.cur, make(map[string]any, c.size)
	}
	c.cur[key] = v
}

// commit takes a committed fetch's views.
func (c *objectCache) commit(f fetchObjects) {
	for k, o := range f {
		c.add(k, o.val)
	}
}

// reset forgets everything, after a fetch failed to commit.
func (c *objectCache) reset() { c.cur, c.old = nil, nil }

// assign stores val (a view value, nil for absent) into out, a pointer to
// a value of the same type; false when val is nil.
func assign(out any, val any) bool {
	if val == nil {
		return false
	}
	switch d := out.(type) {
	case *domain.Document:
		*d = *val.(*domain.Document)
		return true
	case *domain.Batch:
		*d = *val.(*domain.Batch)
		return true
	}
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(val))
	return true
}

// valueOf is what put stores: a copy of a document or batch as a pointer,
// or the value itself, dereferenced if it is a pointer, so that it can be
// assigned to what a later get points to.
func valueOf(v any) any {
	switch d := v.(type) {
	case domain.Document:
		return &d
	case *domain.Document:
		c := *d
		return &c
	case domain.Batch:
		return &d
	case *domain.Batch:
		c := *d
		return &c
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		return rv.Elem().Interface()
	}
	return v
}
