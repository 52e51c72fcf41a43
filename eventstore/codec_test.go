package eventstore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/schemas"
	"github.com/hamba/avro/v2"
)

var (
	codecOnce sync.Once
	codecVal  *eventstore.Codec
	codecErr  error
)

func codecForTest(t testing.TB) *eventstore.Codec {
	t.Helper()
	codecOnce.Do(func() { codecVal, codecErr = eventstore.NewCodec() })
	if codecErr != nil {
		t.Fatalf("NewCodec: %v", codecErr)
	}
	return codecVal
}

// codecFill sets every field of the struct v to a distinct non-zero value.
// Pointers (the nullable fields) are set when withPointers, else left nil.
func codecFill(t testing.TB, v reflect.Value, seed *int, withPointers bool) {
	t.Helper()
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		*seed++
		n := *seed
		switch {
		case sf.Type == reflect.TypeOf(time.Time{}):
			// Microsecond precision, UTC: the form producers must use.
			f.Set(reflect.ValueOf(time.Date(2025, 3, 14, 15, 9, 26, 535897000+n*1000, time.UTC)))
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprintf("%s-%d-é✓", sf.Name, n))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
			if withPointers {
				s := fmt.Sprintf("%s-%d", sf.Name, n)
				f.Set(reflect.ValueOf(&s))
			}
		case sf.Type == reflect.TypeOf(&time.Time{}):
			if withPointers {
				t := time.Date(2025, 6, 1, 8, 0, 0, n*1000, time.UTC)
				f.Set(reflect.ValueOf(&t))
			}
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(int64(n) * 1_000_003)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Float64:
			f.SetFloat(float64(n) + 0.25)
		case f.Kind() == reflect.Struct:
			codecFill(t, f, seed, withPointers)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
			f.SetBytes([]byte{0, 1, 2, 0xff, byte(n)})
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{fmt.Sprintf("job-%d-a", n), fmt.Sprintf("job-%d-b", n)}))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			s := reflect.MakeSlice(f.Type(), 3, 3)
			for j := range 3 {
				codecFill(t, s.Index(j), seed, withPointers)
			}
			f.Set(s)
		default:
			t.Fatalf("codecFill: no filler for field %s %s; extend the test", sf.Name, sf.Type)
		}
		if withPointers && f.IsZero() {
			t.Fatalf("codecFill left %s zero", sf.Name)
		}
	}
}

// codecSamples returns every catalogue type, fully populated.
func codecSamples(t testing.TB, withPointers bool) []domain.Event {
	t.Helper()
	var out []domain.Event
	seed := 0
	for _, zero := range domain.Catalogue() {
		ev := reflect.New(reflect.TypeOf(zero).Elem())
		codecFill(t, ev.Elem(), &seed, withPointers)
		out = append(out, ev.Interface().(domain.Event))
	}
	return out
}

func TestCodecRoundTripEveryEvent(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	for _, withPointers := range []bool{true, false} {
		for _, ev := range codecSamples(t, withPointers) {
			t.Run(fmt.Sprintf("%s/pointers=%v", ev.Type(), withPointers), func(t *testing.T) {
				t.Parallel()
				b, err := c.Encode(ev)
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				if reflect.TypeOf(got) != reflect.TypeOf(ev) {
					t.Fatalf("decoded %T, want %T", got, ev)
				}
				if got == ev {
					t.Fatal("Decode returned the encoded pointer, want a fresh value")
				}
				if !reflect.DeepEqual(got, ev) {
					t.Errorf("round trip differs:\n got %+v\nwant %+v", got, ev)
				}
				// What Encode writes is current for its own type only, and
				// encoding the decoded event again gives the same bytes: the
				// history index stores a record's bytes as they are.
				other := map[bool]string{true: "DocumentQueued", false: "DocumentUploaded"}[ev.Type() == "DocumentUploaded"]
				if !c.IsCurrent(b, ev.Type()) || c.IsCurrent(b, other) || c.IsCurrent(b[:10], ev.Type()) {
					t.Errorf("IsCurrent: own type %v, as %s %v, bare header %v", c.IsCurrent(b, ev.Type()), other, c.IsCurrent(b, other), c.IsCurrent(b[:10], ev.Type()))
				}
				if again, err := c.Encode(got); err != nil || !bytes.Equal(again, b) {
					t.Errorf("encoding the decoded event again: %v, equal %v", err, bytes.Equal(again, b))
				}
			})
		}
	}
}

// TestCodecRoundTripZeroEvents: the zero value of every type round-trips
// exactly, empty slices included.
func TestCodecRoundTripZeroEvents(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	for _, ev := range domain.Catalogue() {
		b, err := c.Encode(ev)
		if err != nil {
			t.Fatalf("%s: %v", ev.Type(), err)
		}
		got, err := c.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", ev.Type(), err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("%s: got %+v, want %+v", ev.Type(), got, ev)
		}
	}
	// Empty non-nil slices come back nil: Avro has only "empty".
	in := &domain.DocumentQueued{JobIDs: []string{}}
	b, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if q := got.(*domain.DocumentQueued); q.JobIDs != nil {
		t.Errorf("JobIDs = %#v, want nil", q.JobIDs)
	}
}

func TestCodecTimesAreUTCMicroseconds(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	loc := time.FixedZone("UTC+5:30", 5*3600+1800)
	for _, in := range []time.Time{
		time.Date(2025, 1, 2, 3, 4, 5, 123456789, loc),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), // before the epoch
		time.Now(), // has a monotonic reading and nanoseconds
	} {
		ev := &domain.OrgCreated{Meta: domain.Meta{OccurredAt: in}, Name: "acme"}
		b, err := c.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out := got.Header().OccurredAt
		want := in.UTC().Truncate(time.Microsecond)
		if !out.Equal(want) || out.Location() != time.UTC {
			t.Errorf("%v: decoded %v, want %v in UTC", in, out, want)
		}
		if !reflect.DeepEqual(out, in.Round(0).UTC().Truncate(time.Microsecond)) {
			t.Errorf("%v: decoded time is not DeepEqual to the truncated UTC input", in)
		}
	}
}

// codecFieldNames returns the avro names of the struct's fields.
func codecFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := sf.Tag.Get("avro")
		if name == "" {
			name = sf.Name
		}
		if name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// codecCompareFields fails if the record's field set differs from the Go
// struct's avro tags, recursing into nested records and arrays of records.
func codecCompareFields(t *testing.T, where string, s avro.Schema, typ reflect.Type) {
	t.Helper()
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		t.Errorf("%s: schema is %s, Go type %s is a struct", where, s.Type(), typ)
		return
	}
	goNames := codecFieldNames(typ)
	var avroNames []string
	for _, f := range rec.Fields() {
		avroNames = append(avroNames, f.Name())
	}
	if strings.Join(sortedCopy(goNames), ",") != strings.Join(sortedCopy(avroNames), ",") {
		t.Errorf("%s: schema fields %v, Go avro tags %v", where, avroNames, goNames)
		return
	}
	for i := range typ.NumField() {
		sf := typ.Field(i)
		ft := sf.Type
		var fs avro.Schema
		for _, f := range rec.Fields() {
			if f.Name() == sf.Tag.Get("avro") {
				fs = f.Type()
			}
		}
		switch {
		case ft.Kind() == reflect.Struct && ft != reflect.TypeOf(time.Time{}):
			codecCompareFields(t, where+"."+sf.Name, fs, ft)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			arr, ok := fs.(*avro.ArraySchema)
			if !ok {
				t.Errorf("%s.%s: schema %s, want an array", where, sf.Name, fs.Type())
				continue
			}
			codecCompareFields(t, where+"."+sf.Name+"[]", arr.Items(), ft.Elem())
		case ft.Kind() == reflect.Pointer:
			if u, ok := fs.(*avro.UnionSchema); !ok || !u.Nullable() {
				t.Errorf("%s.%s: Go pointer, schema %s is not a nullable union", where, sf.Name, fs.Type())
			}
		}
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

func TestCodecCatalogueMatchesSchemas(t *testing.T) {
	t.Parallel()
	all, err := schemas.Parse()
	if err != nil {
		t.Fatal(err)
	}
	c := codecForTest(t)
	seen := map[string]bool{}
	for _, ev := range domain.Catalogue() {
		name := ev.Type()
		seen[name] = true
		s, ok := all[name]
		if !ok {
			t.Errorf("%s: no schema in package schemas", name)
			continue
		}
		if _, ok := c.Fingerprint(name); !ok {
			t.Errorf("%s: codec has no fingerprint", name)
		}
		codecCompareFields(t, name, s, reflect.TypeOf(ev).Elem())
	}
	for name := range all {
		if !seen[name] {
			t.Errorf("schema %s has no type in domain.Catalogue()", name)
		}
	}
	if _, ok := c.Fingerprint("NoSuchEvent"); ok {
		t.Error("Fingerprint(NoSuchEvent) reported ok")
	}
}

// codecRefCRC64Avro is the reference CRC-64-AVRO from the Avro
// specification, written out independently of hamba/avro and schemas.
func codecRefCRC64Avro(data string) uint64 {
	const empty = 0xc15d213aa4d7a795
	var table [256]uint64
	for i := range table {
		fp := uint64(i)
		for range 8 {
			fp = (fp >> 1) ^ (empty & -(fp & 1))
		}
		table[i] = fp
	}
	fp := uint64(empty)
	for i := range len(data) {
		fp = (fp >> 8) ^ table[byte(fp)^data[i]]
	}
	return fp
}

func TestCodecHeader(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)

	// Hand-written Parsing Canonical Form of ApiKeyRevoked: Meta inlined at
	// its first use, doc and logicalType stripped.
	const pcf = `{"name":"docket.events.ApiKeyRevoked","type":"record","fields":[` +
		`{"name":"meta","type":{"name":"docket.events.Meta","type":"record","fields":[` +
		`{"name":"event_id","type":"string"},{"name":"org_id","type":"string"},` +
		`{"name":"occurred_at","type":"long"},{"name":"actor","type":"string"},` +
		`{"name":"correlation_id","type":"string"}]}},` +
		`{"name":"key_id","type":"string"}]}`
	var want [8]byte
	binary.LittleEndian.PutUint64(want[:], codecRefCRC64Avro(pcf))
	fp, ok := c.Fingerprint("ApiKeyRevoked")
	if !ok || fp != want {
		t.Fatalf("Fingerprint(ApiKeyRevoked) = % X, want % X", fp, want)
	}
	b, err := c.Encode(&domain.ApiKeyRevoked{KeyID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:2], []byte{0xC3, 0x01}) || !bytes.Equal(b[2:10], want[:]) {
		t.Fatalf("header % X, want C3 01 % X", b[:10], want)
	}

	// hamba's own CRC64Avro is big-endian and hashes a form that keeps
	// logicalType, so it must not be what is on the wire.
	all, err := schemas.Parse()
	if err != nil {
		t.Fatal(err)
	}
	hamba, err := all["ApiKeyRevoked"].FingerprintUsing(avro.CRC64Avro)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(hamba, want[:]) {
		t.Log("hamba's CRC64Avro fingerprint now equals the specification's")
	}

	// Every type: header is C3 01 + its fingerprint, fingerprints distinct.
	seen := map[[8]byte]string{}
	for _, ev := range codecSamples(t, true) {
		fp, ok := c.Fingerprint(ev.Type())
		if !ok {
			t.Fatalf("%s: no fingerprint", ev.Type())
		}
		if other, dup := seen[fp]; dup {
			t.Errorf("%s and %s share fingerprint % X", ev.Type(), other, fp)
		}
		seen[fp] = ev.Type()
		b, err := c.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != 0xC3 || b[1] != 0x01 || [8]byte(b[2:10]) != fp {
			t.Errorf("%s: header % X, want C3 01 % X", ev.Type(), b[:10], fp)
		}
		s := all[ev.Type()]
		pcf, err := schemas.CanonicalForm(s)
		if err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint64(fp[:]) != codecRefCRC64Avro(pcf) {
			t.Errorf("%s: fingerprint is not the little-endian CRC-64-AVRO of %s", ev.Type(), pcf)
		}
	}
}

// TestCodecBodyIsPlainAvro decodes an encoded body with hamba's default
// configuration and the bare schema, as a consumer holding only the schema
// files would.
func TestCodecBodyIsPlainAvro(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	all, err := schemas.Parse()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range codecSamples(t, true) {
		b, err := c.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		var generic map[string]any
		if err := avro.Unmarshal(all[ev.Type()], b[10:], &generic); err != nil {
			t.Errorf("%s: generic decode: %v", ev.Type(), err)
			continue
		}
		meta, _ := generic["meta"].(map[string]any)
		if meta["event_id"] != ev.Header().EventID {
			t.Errorf("%s: generic meta.event_id = %v, want %q", ev.Type(), meta["event_id"], ev.Header().EventID)
		}
	}
}

func TestCodecMalformedInput(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	good, err := c.Encode(codecSamples(t, true)[7]) // DocumentSucceeded: arrays, union, nested records
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, eventstore.ErrBadEncoding},
		{"empty", []byte{}, eventstore.ErrBadEncoding},
		{"marker only", []byte{0xC3, 0x01}, eventstore.ErrBadEncoding},
		{"short header", good[:9], eventstore.ErrBadEncoding},
		{"wrong first magic byte", mutate(func(b []byte) []byte { b[0] = 0xC4; return b }), eventstore.ErrBadEncoding},
		{"wrong second magic byte", mutate(func(b []byte) []byte { b[1] = 0x02; return b }), eventstore.ErrBadEncoding},
		{"confluent framing", append([]byte{0, 0, 0, 0, 1}, good[10:]...), eventstore.ErrBadEncoding},
		{"unknown fingerprint", mutate(func(b []byte) []byte { b[5] ^= 0xFF; return b }), eventstore.ErrUnknownFingerprint},
		{"big-endian fingerprint", mutate(func(b []byte) []byte { slicesReverse(b[2:10]); return b }), eventstore.ErrUnknownFingerprint},
		{"header only", good[:10], eventstore.ErrMalformedBody},
		{"truncated body", good[:len(good)-1], eventstore.ErrMalformedBody},
		{"trailing bytes", append(append([]byte(nil), good...), 0), eventstore.ErrMalformedBody},
		{"huge string length", append(append([]byte(nil), good[:10]...), 0xFE, 0xFF, 0xFF, 0xFF, 0x0F), eventstore.ErrMalformedBody},
		{"negative string length", append(append([]byte(nil), good[:10]...), 0x01), eventstore.ErrMalformedBody},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := c.Decode(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode error %v, want %v", err, tc.want)
			}
			if ev != nil {
				t.Errorf("Decode returned %T with an error", ev)
			}
		})
	}
}

func slicesReverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

// TestCodecEveryTruncation cuts every sample at every length: each must fail
// with a sentinel and none may panic.
func TestCodecEveryTruncation(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	for _, ev := range codecSamples(t, true) {
		b, err := c.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(b) {
			want := eventstore.ErrMalformedBody
			if n < 10 {
				want = eventstore.ErrBadEncoding
			}
			if _, err := c.Decode(b[:n]); !errors.Is(err, want) {
				t.Fatalf("%s cut to %d of %d bytes: error %v, want %v", ev.Type(), n, len(b), err, want)
			}
		}
	}
}

func TestCodecEncodeRejects(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	if _, err := c.Encode(nil); !errors.Is(err, eventstore.ErrUnknownEvent) {
		t.Errorf("Encode(nil): %v, want ErrUnknownEvent", err)
	}
	if _, err := c.Encode(codecForeignEvent{}); !errors.Is(err, eventstore.ErrUnknownEvent) {
		t.Errorf("Encode(foreign type): %v, want ErrUnknownEvent", err)
	}
	if _, err := c.Encode(&codecImpostor{}); !errors.Is(err, eventstore.ErrUnknownEvent) {
		t.Errorf("Encode(impostor): %v, want ErrUnknownEvent", err)
	}
	if _, err := c.Encode((*domain.OrgCreated)(nil)); err == nil {
		t.Error("Encode(typed nil) succeeded")
	}
	big := &domain.DocumentQueued{JobIDs: make([]string, eventstore.MaxArrayLen+1)}
	if _, err := c.Encode(big); !errors.Is(err, eventstore.ErrTooLarge) {
		t.Errorf("Encode(too many job ids): %v, want ErrTooLarge", err)
	}
	huge := &domain.IdempotencyKeyCompleted{Body: make([]byte, eventstore.MaxEncodedSize)}
	if _, err := c.Encode(huge); !errors.Is(err, eventstore.ErrTooLarge) {
		t.Errorf("Encode(huge body): %v, want ErrTooLarge", err)
	}
}

type codecForeignEvent struct{}

func (codecForeignEvent) Type() string         { return "NoSuchEvent" }
func (codecForeignEvent) Header() *domain.Meta { return &domain.Meta{} }

// codecImpostor claims a catalogue name with a different Go type.
type codecImpostor struct{ domain.OrgCreated }

func (*codecImpostor) Type() string { return "OrgCreated" }

func TestCodecConcurrent(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	samples := codecSamples(t, true)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				ev := samples[(g+i)%len(samples)]
				b, err := c.Encode(ev)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := c.Decode(b)
				if err != nil || !reflect.DeepEqual(got, ev) {
					t.Errorf("%s: concurrent round trip failed: %v", ev.Type(), err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestDecodedBytesDoNotShareTheNextEventsStrings decodes a stored response
// body and then an upload, over and over: decoding reuses Readers, whose
// slab hands out both, and an append to the body must not overwrite the
// upload's strings.
func TestDecodedBytesDoNotShareTheNextEventsStrings(t *testing.T) {
	c := codecForTest(t)
	name := "invoice.pdf"
	completed, err := c.Encode(&domain.IdempotencyKeyCompleted{Meta: domain.Meta{EventID: "evt_1", OrgID: "org_1", OccurredAt: time.Unix(1, 0).UTC(), Actor: "a"},
		Key: "k", Status: 201, Body: []byte(`{"id":"doc_1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	uploaded, err := c.Encode(&domain.DocumentUploaded{Meta: domain.Meta{EventID: "evt_2", OrgID: "org_2", OccurredAt: time.Unix(2, 0).UTC(), Actor: "b"},
		DocumentID: "doc_2", BatchName: &name, FileName: name, ContentType: "application/pdf", Size: 9, BlobKey: "blob"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		a, err := c.Decode(completed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Decode(uploaded)
		if err != nil {
			t.Fatal(err)
		}
		body := a.(*domain.IdempotencyKeyCompleted).Body
		_ = append(body, bytes.Repeat([]byte{'X'}, 64)...)
		if u := b.(*domain.DocumentUploaded); u.DocumentID != "doc_2" || u.FileName != name || u.ContentType != "application/pdf" || u.Meta.OrgID != "org_2" {
			t.Fatalf("round %d: an append to a decoded body overwrote the next event: %+v", i, u)
		}
	}
}
