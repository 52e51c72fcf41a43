package eventstore_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/docket/docket/eventstore"
)

// FuzzDecode feeds the Avro decoder arbitrary bytes, seeded with every
// event type (with and without its optional fields) and corruptions of
// them. It must never panic; it refuses with one of its sentinels, or
// decodes an event that encodes and decodes again to the same value (so a
// record that passed once is read the same way by every node, every time).
func FuzzDecode(f *testing.F) {
	codec, err := eventstore.NewCodec()
	if err != nil {
		f.Fatal(err)
	}
	for _, withPointers := range []bool{true, false} {
		for _, ev := range codecSamples(f, withPointers) {
			b, err := codec.Encode(ev)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			f.Add(b[:len(b)-1])
			f.Add(append(append([]byte(nil), b...), 0))
			flipped := append([]byte(nil), b...)
			flipped[len(flipped)/2] ^= 0x80
			f.Add(flipped)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xC3, 0x01})
	f.Add([]byte{0xC3, 0x01, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := codec.Decode(b)
		if err != nil {
			if !errors.Is(err, eventstore.ErrBadEncoding) && !errors.Is(err, eventstore.ErrUnknownFingerprint) && !errors.Is(err, eventstore.ErrMalformedBody) {
				t.Fatalf("error outside the sentinels: %v", err)
			}
			return
		}
		again, err := codec.Encode(ev)
		if err != nil {
			// Decode may accept what Encode refuses only for the limits
			// Encode enforces on the way in.
			if !errors.Is(err, eventstore.ErrTooLarge) {
				t.Fatalf("decoded %T does not encode: %v", ev, err)
			}
			return
		}
		ev2, err := codec.Decode(again)
		if err != nil {
			t.Fatalf("re-encoded %T does not decode: %v", ev, err)
		}
		if !reflect.DeepEqual(ev, ev2) {
			t.Fatalf("%T changed through encode/decode:\n%+v\n%+v", ev, ev, ev2)
		}
	})
}
