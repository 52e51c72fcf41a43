package schemas

import (
	"encoding/json"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(FS, "*.avsc")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(files) - len(shared); len(got) != want {
		t.Fatalf("Parse returned %d event schemas, want %d", len(got), want)
	}
	for name, s := range got {
		rec, ok := s.(*avro.RecordSchema)
		if !ok {
			t.Fatalf("%s: %T, want *avro.RecordSchema", name, s)
		}
		if rec.FullName() != Namespace+"."+name {
			t.Errorf("%s: record is %s", name, rec.FullName())
		}
		if f := rec.Fields(); len(f) == 0 || f[0].Name() != "meta" || f[0].Type().(avro.NamedSchema).FullName() != Namespace+".Meta" {
			t.Errorf("%s: first field must be meta of type %s.Meta", name, Namespace)
		}
	}
	for _, name := range shared {
		if _, ok := got[name]; ok {
			t.Errorf("shared record %s returned as an event", name)
		}
	}
}

// TestParseIsolated checks that Parse does not depend on or pollute
// hamba/avro's global schema cache.
func TestParseIsolated(t *testing.T) {
	t.Parallel()
	if avro.DefaultSchemaCache.Get(Namespace+".Meta") != nil {
		t.Skip("something else registered docket schemas globally")
	}
	if _, err := Parse(); err != nil {
		t.Fatal(err)
	}
	if avro.DefaultSchemaCache.Get(Namespace+".Meta") != nil {
		t.Error("Parse registered Meta in avro.DefaultSchemaCache")
	}
}

// TestFileConventions checks every current and historical file: a record in
// namespace docket.events named after its file, a doc on every record and
// field, and nullable fields written as ["null", T] with "default": null.
func TestFileConventions(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(FS, "*.avsc")
	if err != nil {
		t.Fatal(err)
	}
	hist, err := fs.Glob(FS, "history/*.avsc")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append(files, hist...) {
		data, err := fs.ReadFile(FS, file)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]any
		if err := json.Unmarshal(data, &top); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		name, _, _ := strings.Cut(path.Base(file), ".")
		if top["type"] != "record" || top["name"] != name || top["namespace"] != Namespace {
			t.Errorf("%s: want a record named %q in namespace %q, got type=%v name=%v namespace=%v",
				file, name, Namespace, top["type"], top["name"], top["namespace"])
		}
		checkRecord(t, file, top)
	}
}

func checkRecord(t *testing.T, where string, rec map[string]any) {
	t.Helper()
	if doc, _ := rec["doc"].(string); strings.TrimSpace(doc) == "" {
		t.Errorf("%s: record %v has no doc", where, rec["name"])
	}
	fields, ok := rec["fields"].([]any)
	if !ok {
		t.Errorf("%s: record %v has no fields", where, rec["name"])
		return
	}
	for _, f := range fields {
		field, _ := f.(map[string]any)
		at := where + ": field " + field["name"].(string)
		if doc, _ := field["doc"].(string); strings.TrimSpace(doc) == "" {
			t.Errorf("%s has no doc", at)
		}
		checkType(t, at, field["type"])
		if union, ok := field["type"].([]any); ok {
			def, has := field["default"]
			if len(union) != 2 || union[0] != "null" || !has || def != nil {
				t.Errorf(`%s: a nullable field must be ["null", T] with "default": null`, at)
			}
		}
	}
}

func checkType(t *testing.T, where string, typ any) {
	t.Helper()
	switch v := typ.(type) {
	case []any:
		for _, u := range v {
			checkType(t, where, u)
		}
	case map[string]any:
		switch v["type"] {
		case "record", "error":
			checkRecord(t, where, v)
		case "enum", "fixed":
			if doc, _ := v["doc"].(string); doc == "" {
				t.Errorf("%s: %v %v has no doc", where, v["type"], v["name"])
			}
		case "array":
			checkType(t, where, v["items"])
		case "map":
			checkType(t, where, v["values"])
		}
	}
}

// TestHistory checks that every current file has a frozen version 1 in
// history/ and that the version-1 set parses on its own.
func TestHistory(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(FS, "*.avsc")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(file, ".avsc")
		if _, err := fs.Stat(FS, "history/"+name+".v1.avsc"); err != nil {
			t.Errorf("%s: no frozen version 1: %v", file, err)
		}
	}
	v1, err := parseSet(FS, "history", ".v1.avsc")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	var v1Names, curNames []string
	for n := range v1 {
		v1Names = append(v1Names, n)
	}
	for n := range cur {
		curNames = append(curNames, n)
	}
	sort.Strings(v1Names)
	sort.Strings(curNames)
	if !reflect.DeepEqual(v1Names, curNames) {
		t.Errorf("history v1 events %v, current events %v", v1Names, curNames)
	}
}
