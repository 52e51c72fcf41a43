package projections

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// fill sets every field reachable from v (a pointer) to a value that is not
// its zero value, different for each field, so that a codec that drops or
// swaps a field fails a round trip.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, *n, *n*1000+7, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)) + time.Duration(*n).String())
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n) * -3)
	case reflect.Uint8:
		v.SetUint(uint64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("fill: a field of kind " + v.Kind().String() + ": teach the view codecs and this test about it")
	}
}

// filled returns a T with every field (and every field of its parts) set
// to a value of its own.
func filled[T any]() T {
	var v T
	n := 0
	fill(reflect.ValueOf(&v).Elem(), &n)
	return v
}

// TestDocumentCodecCoversEveryField round-trips a document with every field
// (and every field of its parts) set, so a field added to domain.Document
// without the codec fails here.
func TestDocumentCodecCoversEveryField(t *testing.T) {
	t.Parallel()
	roundTrips(t, encodeDocument, decodeDocument, filled[domain.Document]())
}

// roundTrips fails the test unless each of vs decodes back deeply equal
// to itself.
func roundTrips[T any](t *testing.T, encode func(*T) []byte, decode func([]byte, *T) error, vs ...T) {
	t.Helper()
	for _, v := range vs {
		var got T
		if err := decode(encode(&v), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("round trip lost something:\n got %#v\nwant %#v", got, v)
		}
	}
}

// TestDocumentCodecKeepsNilApartFromEmpty: JSON told a document that
// succeeded without line items ([]) from one not yet extracted (null), and
// the API shows the difference.
func TestDocumentCodecKeepsNilApartFromEmpty(t *testing.T) {
	t.Parallel()
	for _, d := range []domain.Document{
		{ID: "d1"},
		{ID: "d2", LineItems: []domain.LineItem{}, JobIDs: []string{}, Runs: []domain.Run{}, Pending: &domain.PendingRun{JobIDs: []string{}}},
	} {
		var got domain.Document
		if err := decodeDocument(encodeDocument(&d), &got); err != nil || !reflect.DeepEqual(got, d) {
			t.Fatalf("%s: %v\n got %#v\nwant %#v", d.ID, err, got, d)
		}
	}
}

// TestDocumentCodecRefusesBrokenValues: every truncation of a value, a
// value with bytes left over and an unknown version are errors (never a
// panic, never a half-read document taken as whole).
func TestDocumentCodecRefusesBrokenValues(t *testing.T) {
	t.Parallel()
	d := filled[domain.Document]()
	refusesBroken(t, encodeDocument(&d), func(val []byte) error { return decodeDocument(val, &domain.Document{}) })
}

// refusesBroken checks that decode refuses every truncation of val, val
// with a byte left over, and val under the next version.
func refusesBroken(t *testing.T, val []byte, decode func([]byte) error) {
	t.Helper()
	for i := range val {
		if err := decode(val[:i]); !errors.Is(err, errViewCodec) {
			t.Fatalf("%d of %d bytes: %v", i, len(val), err)
		}
	}
	if err := decode(append(append([]byte{}, val...), 0)); !errors.Is(err, errViewCodec) {
		t.Fatalf("a byte left over: %v", err)
	}
	if err := decode(append([]byte{val[0] + 1}, val[1:]...)); !errors.Is(err, errViewCodec) {
		t.Fatalf("another version: %v", err)
	}
}

// FuzzDocumentCodec: whatever the bytes, decoding returns a document or an
// error, and a document it returns encodes back to the same bytes.
func FuzzDocumentCodec(f *testing.F) {
	d := filled[domain.Document]()
	f.Add(encodeDocument(&d))
	f.Add(encodeDocument(&domain.Document{ID: "d1", LineItems: []domain.LineItem{}}))
	fuzzReadsBack(f, encodeDocument, decodeDocument)
}

// fuzzReadsBack fuzzes a view codec: whatever the bytes, decode returns a
// value or an error, and a value it returns reads back the same once
// encoded again (varints have more than one spelling, so the bytes may
// differ). "The same" is compared encoded: a float may be NaN, which
// reflect.DeepEqual never finds equal to itself (testdata's
// FuzzDocumentCodec/7103db0424d44868, a line item's unit price).
func fuzzReadsBack[T any](f *testing.F, encode func(*T) []byte, decode func([]byte, *T) error) {
	f.Fuzz(func(t *testing.T, val []byte) {
		var got T
		if err := decode(val, &got); err != nil {
			return
		}
		again := encode(&got)
		var back T
		if err := decode(again, &back); err != nil || !bytes.Equal(encode(&back), again) {
			t.Fatalf("re-encoded value reads back differently: %v", err)
		}
	})
}
