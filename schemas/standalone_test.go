package schemas

import (
	"testing"

	"github.com/hamba/avro/v2"
)

// TestStandalone checks that every inlined schema parses on its own and is
// the same schema (same fingerprint) as the one parsed from the files.
func TestStandalone(t *testing.T) {
	t.Parallel()
	cur, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range cur {
		text, err := Standalone(name)
		if err != nil {
			t.Fatal(err)
		}
		alone, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
		if err != nil {
			t.Fatalf("%s: standalone schema does not parse alone: %v", name, err)
		}
		a, _ := Fingerprint(s)
		b, _ := Fingerprint(alone)
		if a != b || a == 0 {
			t.Errorf("%s: standalone fingerprint %x, from files %x", name, b, a)
		}
	}
	if _, err := Standalone("NoSuchEvent"); err == nil {
		t.Error("Standalone of an unknown type succeeded")
	}
}
