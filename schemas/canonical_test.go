package schemas

import (
	"testing"

	"github.com/hamba/avro/v2"
)

// refCRC64Avro is the reference CRC-64-AVRO algorithm, transcribed from the
// Avro specification ("Schema Fingerprints"), independent of hamba/avro.
func refCRC64Avro(data []byte) uint64 {
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
	for _, b := range data {
		fp = (fp >> 8) ^ table[byte(fp)^b]
	}
	return fp
}

// Vectors from Apache Avro's share/test/data/schema-tests.txt; fingerprints
// are Java's signed parsingFingerprint64 values.
var canonicalVectors = []struct {
	input, canonical string
	fingerprint      int64
}{
	{`"null"`, `"null"`, 7195948357588979594},
	{`{"type":"null"}`, `"null"`, 7195948357588979594},
	{`"boolean"`, `"boolean"`, -6970731678124411036},
	{`"int"`, `"int"`, 8247732601305521295},
	{`"long"`, `"long"`, -3434872931120570953},
	{`"string"`, `"string"`, -8142146995180207161},
	{`["int", "boolean"]`, `["int","boolean"]`, 5392556393470105090},
	{`{"type":"fixed","name":"foo","size":15}`, `{"name":"foo","type":"fixed","size":15}`, 1756455273707447556},
	{`{"type":"record","name":"foo","fields":[]}`, `{"name":"foo","type":"record","fields":[]}`, -4824392279771201922},
	{
		`{"type":"record","name":"foo","doc":"x","fields":[{"name":"f1","type":"boolean","doc":"y"}]}`,
		`{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}`,
		7843277075252814651,
	},
	{
		`{"type":"record","name":"foo","fields":[{"name":"f1","type":"boolean"},{"name":"f2","type":"int"}]}`,
		`{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"},{"name":"f2","type":"int"}]}`,
		-4860222112080293046,
	},
	{`{"type":"enum","name":"foo","symbols":["A1"]}`, `{"name":"foo","type":"enum","symbols":["A1"]}`, -6342190197741309591},
	{
		`{"name":"PigValue","type":"record","fields":[{"name":"value","type":["null","int","long","PigValue"]}]}`,
		`{"name":"PigValue","type":"record","fields":[{"name":"value","type":["null","int","long","PigValue"]}]}`,
		-1759257747318642341,
	},
}

func TestCanonicalFormVectors(t *testing.T) {
	t.Parallel()
	for _, v := range canonicalVectors {
		s, err := avro.ParseWithCache(v.input, "", &avro.SchemaCache{})
		if err != nil {
			t.Fatalf("%s: %v", v.input, err)
		}
		pcf, err := CanonicalForm(s)
		if err != nil {
			t.Fatalf("%s: %v", v.input, err)
		}
		if pcf != v.canonical {
			t.Errorf("CanonicalForm(%s)\n got %s\nwant %s", v.input, pcf, v.canonical)
		}
		want := uint64(v.fingerprint)
		if got := refCRC64Avro([]byte(v.canonical)); got != want {
			t.Errorf("reference CRC of %s = %d, published %d", v.canonical, int64(got), v.fingerprint)
		}
		fp, err := Fingerprint(s)
		if err != nil {
			t.Fatal(err)
		}
		if fp != want {
			t.Errorf("Fingerprint(%s) = %d, want %d", v.input, int64(fp), v.fingerprint)
		}
	}
}

// TestCanonicalFormStripsLogicalType pins the one place where the
// specification and hamba/avro's Schema.String disagree.
func TestCanonicalFormStripsLogicalType(t *testing.T) {
	t.Parallel()
	s, err := avro.ParseWithCache(`{"type":"record","name":"r","namespace":"n","fields":[
		{"name":"t","type":{"type":"long","logicalType":"timestamp-micros"}}]}`, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"name":"n.r","type":"record","fields":[{"name":"t","type":"long"}]}`
	got, err := CanonicalForm(s)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if s.String() == want {
		t.Log("hamba/avro's Schema.String now strips logicalType too")
	}
}

func TestCanonicalFormOfEvents(t *testing.T) {
	t.Parallel()
	all, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	const meta = `{"name":"docket.events.Meta","type":"record","fields":[` +
		`{"name":"event_id","type":"string"},{"name":"org_id","type":"string"},` +
		`{"name":"occurred_at","type":"long"},{"name":"actor","type":"string"},` +
		`{"name":"correlation_id","type":"string"}]}`
	const lineItem = `{"name":"docket.events.LineItem","type":"record","fields":[` +
		`{"name":"description","type":"string"},{"name":"quantity","type":"double"},` +
		`{"name":"unit_price","type":"double"},{"name":"amount","type":"double"}]}`
	want := map[string]string{
		"ApiKeyRevoked": `{"name":"docket.events.ApiKeyRevoked","type":"record","fields":[` +
			`{"name":"meta","type":` + meta + `},{"name":"key_id","type":"string"}]}`,
		"DocumentSucceeded": `{"name":"docket.events.DocumentSucceeded","type":"record","fields":[` +
			`{"name":"meta","type":` + meta + `},{"name":"document_id","type":"string"},` +
			`{"name":"claim_id","type":"string"},{"name":"currency","type":["null","string"]},` +
			`{"name":"line_items","type":{"type":"array","items":` + lineItem + `}}]}`,
	}
	for name, w := range want {
		got, err := CanonicalForm(all[name])
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("%s:\n got %s\nwant %s", name, got, w)
		}
	}
	fps := map[uint64]string{}
	for name, s := range all {
		pcf, err := CanonicalForm(s)
		if err != nil {
			t.Fatal(err)
		}
		fp, err := Fingerprint(s)
		if err != nil {
			t.Fatal(err)
		}
		if ref := refCRC64Avro([]byte(pcf)); fp != ref {
			t.Errorf("%s: Fingerprint %x, reference %x", name, fp, ref)
		}
		if other, dup := fps[fp]; dup {
			t.Errorf("%s and %s share fingerprint %x", name, other, fp)
		}
		fps[fp] = name
	}
}
