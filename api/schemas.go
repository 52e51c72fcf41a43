package api

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gorilla/mux"
	"github.com/hamba/avro/v2"

	"github.com/docket/docket/schemas"
)

// The event schemas are served without authentication: they are the
// public contract of the event log (schemas/README.md), hold no org's
// data, and a consumer of the log in another language needs them before
// it has any reason to hold an API key, just as /openapi.json is public.

// schemaJSON is one schema file: its name, its CRC-64-AVRO fingerprint as
// 16 hex digits of the number (the single-object encoding carries its 8
// bytes little-endian after C3 01), and the file's JSON as it is.
type schemaJSON struct {
	Name        string          `json:"name"`
	Event       bool            `json:"event"`
	Fingerprint string          `json:"fingerprint"`
	Schema      json.RawMessage `json:"schema"`
	Versions    []versionJSON   `json:"versions,omitempty"`
}

// versionJSON is one frozen version from schemas/history.
type versionJSON struct {
	Version     int             `json:"version"`
	Fingerprint string          `json:"fingerprint"`
	Schema      json.RawMessage `json:"schema"`
}

// sharedRecords are the named records the event schemas refer to; they
// are parsed first so that the names resolve (schemas/README.md).
var sharedRecords = []string{"Meta", "LineItem"}

// schemaCatalogue parses every schema file once.
var schemaCatalogue = sync.OnceValues(loadSchemas)

func loadSchemas() ([]schemaJSON, error) {
	files, err := fs.Glob(schemas.FS, "*.avsc")
	if err != nil {
		return nil, err
	}
	var out []schemaJSON
	for _, f := range files {
		name := strings.TrimSuffix(f, ".avsc")
		s, err := schemaFile(f, "", ".avsc")
		if err != nil {
			return nil, err
		}
		s.Name, s.Event = name, !isShared(name)
		versions, err := fs.Glob(schemas.FS, "history/"+name+".v*.avsc")
		if err != nil {
			return nil, err
		}
		for _, vf := range versions {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path.Base(vf), name+".v"), ".avsc"))
			if err != nil {
				return nil, fmt.Errorf("api: schema history file %s: %w", vf, err)
			}
			// A frozen version resolves the shared records as of version 1,
			// the only one there is; a new Meta version must revisit this.
			v, err := schemaFile(vf, "history/", ".v1.avsc")
			if err != nil {
				return nil, err
			}
			s.Versions = append(s.Versions, versionJSON{Version: n, Fingerprint: v.Fingerprint, Schema: v.Schema})
		}
		sort.Slice(s.Versions, func(i, j int) bool { return s.Versions[i].Version < s.Versions[j].Version })
		out = append(out, s)
	}
	return out, nil
}

func isShared(name string) bool {
	for _, s := range sharedRecords {
		if s == name {
			return true
		}
	}
	return false
}

// schemaFile parses file after the shared records <dir><Name><suffix> and
// fingerprints it.
func schemaFile(file, dir, suffix string) (schemaJSON, error) {
	cache := &avro.SchemaCache{}
	for _, shared := range sharedRecords {
		f := dir + shared + suffix
		if f == file {
			break
		}
		data, err := fs.ReadFile(schemas.FS, f)
		if err != nil {
			return schemaJSON{}, fmt.Errorf("api: %w", err)
		}
		if _, err := avro.ParseBytesWithCache(data, "", cache); err != nil {
			return schemaJSON{}, fmt.Errorf("api: schema %s: %w", f, err)
		}
	}
	data, err := fs.ReadFile(schemas.FS, file)
	if err != nil {
		return schemaJSON{}, fmt.Errorf("api: %w", err)
	}
	parsed, err := avro.ParseBytesWithCache(data, "", cache)
	if err != nil {
		return schemaJSON{}, fmt.Errorf("api: schema %s: %w", file, err)
	}
	fp, err := schemas.Fingerprint(parsed)
	if err != nil {
		return schemaJSON{}, fmt.Errorf("api: schema %s: %w", file, err)
	}
	return schemaJSON{Fingerprint: fmt.Sprintf("%016x", fp), Schema: json.RawMessage(data)}, nil
}

// serveSchemas lists every current schema (GET /v1/schemas).
func serveSchemas(w http.ResponseWriter, r *http.Request) {
	all, err := schemaCatalogue()
	if err != nil {
		writeError(w, r, err)
		return
	}
	list := make([]schemaJSON, len(all))
	for i, s := range all {
		s.Versions = nil
		list[i] = s
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"schemas": list})
}

// serveSchema shows one schema with its frozen versions
// (GET /v1/schemas/{name}).
func serveSchema(w http.ResponseWriter, r *http.Request) {
	all, err := schemaCatalogue()
	if err != nil {
		writeError(w, r, err)
		return
	}
	name := mux.Vars(r)["name"]
	for _, s := range all {
		if s.Name == name {
			writeJSON(w, r, http.StatusOK, s)
			return
		}
	}
	writeError(w, r, fmt.Errorf("%w: no schema %q", ErrNotFound, name))
}
