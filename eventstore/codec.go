package eventstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/schemas"
	"github.com/hamba/avro/v2"
)

// Single-object encoding (Avro specification, "Single-object encoding"): a
// two-byte marker, the 8-byte little-endian CRC-64-AVRO fingerprint of the
// writer schema's Parsing Canonical Form, then the Avro binary body.
const (
	soeMarker0   = 0xC3
	soeMarker1   = 0x01
	soeHeaderLen = 10
)

// Size limits. Decode refuses to allocate more than this for corrupt input,
// and Encode refuses events beyond them, so that every event Encode accepts
// decodes again: a record that can never be decoded would stop every
// projection that meets it.
const (
	// MaxEncodedSize bounds the Avro body of one event (and so every string
	// and bytes value in it).
	MaxEncodedSize = 16 << 20
	// MaxArrayLen bounds the number of elements of any array in an event.
	MaxArrayLen = 1 << 20
)

// codecAPI is the hamba/avro configuration used for every event. Arrays are
// written as plain counted blocks (no byte-size prefix), the simplest form
// every Avro implementation reads.
var codecAPI = avro.Config{
	TagKey:                 "avro",
	DisableBlockSizeHeader: true,
	UnionResolutionError:   true,
	MaxByteSliceSize:       MaxEncodedSize,
	MaxSliceAllocSize:      MaxArrayLen,
}.Freeze()

// codecEntry is what the codec knows about one event type.
type codecEntry struct {
	name   string
	schema avro.Schema
	typ    reflect.Type // the struct type; events are *typ
	header [soeHeaderLen]byte
}

// Codec encodes domain events as Avro single-object encoded values (or, with
// WithRegistry, in the Confluent wire format) and decodes them back, using
// the schemas of package schemas. It is safe for concurrent use.
//
// Times: Meta.OccurredAt is an Avro timestamp-micros. Encode writes it with
// microsecond precision, dropping any finer part, and Decode returns it in
// UTC. An event therefore round-trips to a reflect.DeepEqual copy only when
// its times are already UTC and truncated to the microsecond; producers must
// build events that way (t.UTC().Truncate(time.Microsecond)) so that the
// event they hold equals the event every consumer decodes.
//
// Empty arrays and bytes decode as nil slices. Events larger than
// MaxEncodedSize or with arrays longer than MaxArrayLen are refused by
// Encode with ErrTooLarge.
type Codec struct {
	byType        map[string]*codecEntry
	byFingerprint map[[8]byte]*codecEntry
	// reg, when set, makes Encode write the Confluent wire format and lets
	// Decode read it (see confluent.go). Nil: single-object encoding only.
	reg *registry
}

// NewCodec parses the embedded schemas, computes each schema's fingerprint
// and checks that the schemas and domain.Catalogue() describe the same set of
// event types, and that each Go type encodes and decodes with its schema.
func NewCodec() (*Codec, error) {
	parsed, err := schemas.Parse()
	if err != nil {
		return nil, fmt.Errorf("eventstore: %w", err)
	}
	c := &Codec{
		byType:        make(map[string]*codecEntry, len(parsed)),
		byFingerprint: make(map[[8]byte]*codecEntry, len(parsed)),
	}
	for _, ev := range domain.Catalogue() {
		name := ev.Type()
		s, ok := parsed[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s has no schema in package schemas", ErrUnknownEvent, name)
		}
		if _, dup := c.byType[name]; dup {
			return nil, fmt.Errorf("eventstore: %s appears twice in domain.Catalogue()", name)
		}
		t := reflect.TypeOf(ev)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("eventstore: %s: catalogue entry %s is not a pointer to a struct", name, t)
		}
		fp, err := schemas.Fingerprint(s)
		if err != nil {
			return nil, fmt.Errorf("eventstore: %s: %w", name, err)
		}
		e := &codecEntry{name: name, schema: s, typ: t.Elem()}
		e.header[0], e.header[1] = soeMarker0, soeMarker1
		binary.LittleEndian.PutUint64(e.header[2:], fp)
		key := [8]byte(e.header[2:])
		if other, dup := c.byFingerprint[key]; dup {
			return nil, fmt.Errorf("eventstore: %s and %s have the same schema fingerprint %x", name, other.name, fp)
		}
		c.byType[name] = e
		c.byFingerprint[key] = e
	}
	for name := range parsed {
		if _, ok := c.byType[name]; !ok {
			return nil, fmt.Errorf("eventstore: schema %s has no event type in domain.Catalogue()", name)
		}
	}
	// Build and exercise every encoder and decoder now, so that a schema
	// that does not fit its Go type fails at start-up, not on first use.
	for _, ev := range domain.Catalogue() {
		b, err := c.Encode(ev)
		if err != nil {
			return nil, err
		}
		if _, err := c.Decode(b); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Encode returns the single-object encoding of e: C3 01, the writer schema's
// fingerprint, then the Avro binary body.
func (c *Codec) Encode(e domain.Event) ([]byte, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil event", ErrUnknownEvent)
	}
	entry, ok := c.byType[e.Type()]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEvent, e.Type())
	}
	v := reflect.ValueOf(e)
	if v.Kind() != reflect.Pointer || v.Type().Elem() != entry.typ {
		return nil, fmt.Errorf("%w: %T is not the catalogue type for %s", ErrUnknownEvent, e, entry.name)
	}
	if v.IsNil() {
		return nil, fmt.Errorf("eventstore: encode %s: nil pointer", entry.name)
	}
	if err := checkArrayLens(v.Elem()); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTooLarge, entry.name, err)
	}
	body, err := codecAPI.Marshal(entry.schema, e)
	if err != nil {
		return nil, fmt.Errorf("eventstore: encode %s: %w", entry.name, err)
	}
	if len(body) > MaxEncodedSize {
		return nil, fmt.Errorf("%w: %s: %d bytes, limit %d", ErrTooLarge, entry.name, len(body), MaxEncodedSize)
	}
	if c.reg != nil {
		return c.reg.frame(entry.name, body), nil
	}
	out := make([]byte, 0, soeHeaderLen+len(body))
	out = append(out, entry.header[:]...)
	return append(out, body...), nil
}

// Decode parses an event and returns a new value of the catalogue's
// concrete type (e.g. *domain.DocumentUploaded). It reads the single-object
// encoding and, when the codec has a schema registry, also the Confluent
// wire format, so a topic can move from one to the other. Errors wrap
// ErrBadEncoding, ErrUnknownFingerprint or ErrMalformedBody.
func (c *Codec) Decode(b []byte) (domain.Event, error) {
	if len(b) > 0 && b[0] == confluentMagic {
		if c.reg == nil {
			return nil, fmt.Errorf("%w: Confluent wire format (magic 00) and no schema registry configured", ErrBadEncoding)
		}
		entry, body, err := c.reg.entry(b)
		if err != nil {
			return nil, err
		}
		return decodeBody(entry, body)
	}
	if len(b) < soeHeaderLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadEncoding, len(b), soeHeaderLen)
	}
	if b[0] != soeMarker0 || b[1] != soeMarker1 {
		return nil, fmt.Errorf("%w: marker %02X %02X, want C3 01 (or 00 with a schema registry)", ErrBadEncoding, b[0], b[1])
	}
	entry, ok := c.byFingerprint[[8]byte(b[2:soeHeaderLen])]
	if !ok {
		return nil, fmt.Errorf("%w: % X", ErrUnknownFingerprint, b[2:soeHeaderLen])
	}
	return decodeBody(entry, b[soeHeaderLen:])
}

// readers are reused across decodes. A Reader copies short strings into a
// 1 KiB slab of its own and hands out views of it; a new Reader per event
// allocated a slab per event, three quarters of the bytes decoding
// allocated (BenchmarkDecodeLifecycle). A reused one fills its slab with
// the strings of several events. The strings stay valid: a slab is never
// written twice, only replaced once full.
var readers = sync.Pool{New: func() any { return avro.NewReader(nil, 0, avro.WithReaderConfig(codecAPI)) }}

// decodeBody decodes an Avro binary body written with entry's schema.
func decodeBody(entry *codecEntry, body []byte) (domain.Event, error) {
	ptr := reflect.New(entry.typ)
	r := readers.Get().(*avro.Reader)
	defer func() {
		r.Reset(nil)
		r.Error = nil
		readers.Put(r)
	}()
	r.Reset(body)
	r.ReadVal(entry.schema, ptr.Interface())
	// Any error, io.EOF included, means the body ended early: a complete
	// body never reads past its end. (avro.Unmarshal would accept a body
	// cut just before a varint, because it ignores io.EOF.)
	if r.Error != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformedBody, entry.name, r.Error)
	}
	// The body must be consumed exactly: Peek sets io.EOF when nothing is
	// left.
	if r.Peek(); !errors.Is(r.Error, io.EOF) {
		return nil, fmt.Errorf("%w: %s: trailing bytes after the body", ErrMalformedBody, entry.name)
	}
	tidySlices(ptr.Elem())
	ev, ok := ptr.Interface().(domain.Event)
	if !ok {
		return nil, fmt.Errorf("%w: %s does not implement domain.Event", ErrUnknownEvent, entry.typ)
	}
	return ev, nil
}

// checkArrayLens reports an error if any array in the struct v, or in the
// structs it contains, is longer than MaxArrayLen. []byte is an Avro bytes
// value, bounded by MaxEncodedSize instead.
func checkArrayLens(v reflect.Value) error {
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Struct:
			if err := checkArrayLens(f); err != nil {
				return err
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() != reflect.Uint8:
			if f.Len() > MaxArrayLen {
				return fmt.Errorf("%s has %d elements, limit %d", v.Type().Field(i).Name, f.Len(), MaxArrayLen)
			}
		}
	}
	return nil
}

// tidySlices sets the empty arrays and bytes of the struct v, and of the
// structs it contains, to nil: Avro does not tell an empty array from a
// missing one and hamba/avro decodes both as empty non-nil slices; nil is
// the Go zero value, so a zero event round-trips to itself. And it clips
// the capacity of bytes values to their length: a reused Reader (readers)
// hands them out of the slab the next events' strings are copied into, so
// an append that fitted the capacity would overwrite those strings.
func tidySlices(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Struct:
			tidySlices(f)
		case reflect.Slice:
			switch {
			case !f.CanSet():
			case f.Len() == 0 && !f.IsNil():
				f.Set(reflect.Zero(f.Type()))
			case f.Type().Elem().Kind() == reflect.Uint8 && f.Cap() > f.Len():
				f.Set(f.Slice3(0, f.Len(), f.Len()))
			}
		}
	}
}

// IsCurrent reports whether b is the single-object encoding of an event of
// eventType written with this codec's schema for it: then a copy of b can
// stand in for encoding the decoded event again. (For what Encode writes
// the two are equal byte for byte; a foreign writer may block arrays
// differently, which decodes the same.)
func (c *Codec) IsCurrent(b []byte, eventType string) bool {
	e, ok := c.byType[eventType]
	return ok && c.reg == nil && len(b) > soeHeaderLen && [soeHeaderLen]byte(b[:soeHeaderLen]) == e.header
}

// Fingerprint returns the 8 fingerprint bytes that follow C3 01 in the
// encoding of eventType: the CRC-64-AVRO of its schema's Parsing Canonical
// Form, little-endian.
func (c *Codec) Fingerprint(eventType string) ([8]byte, bool) {
	e, ok := c.byType[eventType]
	if !ok {
		return [8]byte{}, false
	}
	return [8]byte(e.header[2:]), true
}
