package schemas

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

// released is one frozen schema version from history/.
type released struct {
	version int
	schema  avro.Schema
}

// loadHistory parses every history/<Name>.v<N>.avsc, keyed by name and
// sorted by version. Event files refer to Meta and LineItem by name, so
// each file is parsed with the newest frozen Meta and LineItem: those two
// are checked against their own history as records in their own right.
func loadHistory(t *testing.T) map[string][]released {
	t.Helper()
	files, err := fs.Glob(FS, "history/*.avsc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]released{}
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".avsc")
		name, ver, ok := strings.Cut(base, ".v")
		n, err := strconv.Atoi(ver)
		if !ok || err != nil || n < 1 {
			t.Fatalf("%s: history files are named <Type>.v<N>.avsc", f)
		}
		out[name] = append(out[name], released{version: n})
	}
	newest := func(name string) string {
		vs := out[name]
		max := 0
		for _, r := range vs {
			max = maxInt(max, r.version)
		}
		return fmt.Sprintf("history/%s.v%d.avsc", name, max)
	}
	for name, vs := range out {
		sort.Slice(vs, func(i, j int) bool { return vs[i].version < vs[j].version })
		for i := range vs {
			cache := &avro.SchemaCache{}
			for _, sh := range shared {
				if sh != name {
					mustParse(t, newest(sh), cache)
				}
			}
			vs[i].schema = mustParse(t, fmt.Sprintf("history/%s.v%d.avsc", name, vs[i].version), cache)
			if vs[i].version != i+1 {
				t.Errorf("%s: versions must be 1, 2, ... without gaps; found v%d at place %d", name, vs[i].version, i+1)
			}
		}
	}
	return out
}

func mustParse(t *testing.T, file string, cache *avro.SchemaCache) avro.Schema {
	t.Helper()
	data, err := fs.ReadFile(FS, file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := avro.ParseBytesWithCache(data, "", cache)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return s
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// fullyCompatible is the contract of the log: a consumer built against any
// version reads events written with any other (backward: new reads old;
// forward: old reads new). Each call uses a fresh checker: hamba/avro caches
// verdicts by the schemas' canonical fingerprints, which leave out defaults,
// so a cached verdict for one pair would be reused for a pair that differs
// only in a default (exactly the difference that decides compatibility).
func fullyCompatible(a, b avro.Schema) error {
	sc := avro.NewSchemaCompatibility()
	if err := sc.Compatible(a, b); err != nil {
		return fmt.Errorf("backward (reader new, writer old): %w", err)
	}
	if err := sc.Compatible(b, a); err != nil {
		return fmt.Errorf("forward (reader old, writer new): %w", err)
	}
	return nil
}

// TestCompatibleWithHistory fails when a current schema is not backward and
// forward compatible with every frozen version of it, or when the newest
// frozen version is not the current schema (a change must be released as a
// new history file in the same commit).
func TestCompatibleWithHistory(t *testing.T) {
	t.Parallel()
	hist := loadHistory(t)
	cur, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	current := map[string]avro.Schema{}
	for name, s := range cur {
		current[name] = s
	}
	// The shared records, as the current event schemas resolved them.
	for _, s := range cur {
		for _, f := range s.(*avro.RecordSchema).Fields() {
			collectShared(f.Type(), current)
		}
	}
	for name, s := range current {
		vs := hist[name]
		if len(vs) == 0 {
			t.Errorf("%s: no frozen version in history/", name)
			continue
		}
		for _, r := range vs {
			if err := fullyCompatible(s, r.schema); err != nil {
				t.Errorf("%s: current schema vs history v%d: %v", name, r.version, err)
			}
		}
		last := vs[len(vs)-1]
		a, errA := CanonicalForm(s)
		b, errB := CanonicalForm(last.schema)
		if errA != nil || errB != nil || a != b {
			t.Errorf("%s: current schema differs from its newest frozen version v%d: freeze it as v%d", name, last.version, last.version+1)
		}
	}
}

func collectShared(s avro.Schema, into map[string]avro.Schema) {
	switch v := s.(type) {
	case *avro.RefSchema:
		collectShared(v.Schema(), into)
	case *avro.RecordSchema:
		for _, sh := range shared {
			if v.FullName() == Namespace+"."+sh {
				into[sh] = v
			}
		}
	case *avro.ArraySchema:
		collectShared(v.Items(), into)
	case *avro.UnionSchema:
		for _, u := range v.Types() {
			collectShared(u, into)
		}
	}
}

// TestCompatibilityCheckerCatches proves the check above can fail: the
// changes a careless edit makes are each refused.
func TestCompatibilityCheckerCatches(t *testing.T) {
	t.Parallel()
	base := `{"type":"record","name":"X","namespace":"docket.events","fields":[{"name":"a","type":"string"}%s]}`
	old := avro.MustParse(fmt.Sprintf(base, ""))
	for what, field := range map[string]string{
		"new field without default": `{"name":"a","type":"string"},{"name":"b","type":"string"}`,
		"retyped field":             `{"name":"a","type":"long"}`,
		"removed field":             `{"name":"c","type":"string","default":""}`,
	} {
		changed := avro.MustParse(`{"type":"record","name":"X","namespace":"docket.events","fields":[` + field + `]}`)
		if err := fullyCompatible(changed, old); err == nil {
			t.Errorf("%s: accepted as compatible", what)
		}
	}
	withDefault := avro.MustParse(fmt.Sprintf(base, `,{"name":"b","type":"string","default":""}`))
	if err := fullyCompatible(withDefault, old); err != nil {
		t.Errorf("a new field with a default must be compatible: %v", err)
	}
}
