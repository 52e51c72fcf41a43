package schemas

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/hamba/avro/v2"
)

// Namespace is the Avro namespace of every docket record.
const Namespace = "docket.events"

// FS holds the current schema files (*.avsc) and the frozen released
// versions (history/<Type>.v<N>.avsc).
//
//go:embed *.avsc history/*.avsc
var FS embed.FS

// shared lists the named records referenced by the event schemas, in the
// order they must be parsed. They are not events.
var shared = []string{"Meta", "LineItem"}

// Parse parses the current schema files and returns the schema of every
// event type keyed by its short name, which is the event's Type() (e.g.
// "DocumentUploaded"). The shared records are resolved by name; they are not
// in the map. Each call returns fresh schemas and uses no global state.
func Parse() (map[string]avro.Schema, error) {
	return parseSet(FS, ".", ".avsc")
}

// parseSet parses the files <dir>/<Name><suffix>: first the shared records,
// then every other file as an event schema whose record name must equal
// <Name>.
func parseSet(fsys fs.FS, dir, suffix string) (map[string]avro.Schema, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("schemas: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		name := strings.TrimSuffix(e.Name(), suffix)
		if strings.Contains(name, ".") {
			continue // another version's file, e.g. X.v1.avsc when suffix is .avsc
		}
		names = append(names, name)
	}
	sort.Strings(names)

	cache := &avro.SchemaCache{}
	parse := func(name string) (avro.Schema, error) {
		file := path.Join(dir, name+suffix)
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("schemas: %w", err)
		}
		s, err := avro.ParseBytesWithCache(data, "", cache)
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", file, err)
		}
		rec, ok := s.(*avro.RecordSchema)
		if !ok {
			return nil, fmt.Errorf("schemas: %s: not a record schema", file)
		}
		if rec.Name() != name || rec.Namespace() != Namespace {
			return nil, fmt.Errorf("schemas: %s: record is %s, want %s.%s", file, rec.FullName(), Namespace, name)
		}
		return s, nil
	}

	isShared := map[string]bool{}
	for _, name := range shared {
		isShared[name] = true
		if _, err := parse(name); err != nil {
			return nil, err
		}
	}
	out := make(map[string]avro.Schema, len(names))
	for _, name := range names {
		if isShared[name] {
			continue
		}
		s, err := parse(name)
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, nil
}
