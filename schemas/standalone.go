package schemas

import (
	"encoding/json"
	"fmt"
	"io/fs"
)

// Standalone returns the current schema of event type name as one JSON
// document, with the shared records (Meta, LineItem) written out in full at
// their first use instead of referred to by name. Schema registries and
// Avro libraries that take one schema text at a time need this form; docs
// and defaults are kept, so a registry can check compatibility with them.
func Standalone(name string) (string, error) {
	load := func(file string) (any, error) {
		b, err := fs.ReadFile(FS, file)
		if err != nil {
			return nil, fmt.Errorf("schemas: %w", err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", file, err)
		}
		return v, nil
	}
	defs := map[string]any{}
	for _, s := range shared {
		v, err := load(s + ".avsc")
		if err != nil {
			return "", err
		}
		defs[Namespace+"."+s] = v
		defs[s] = v
	}
	top, err := load(name + ".avsc")
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	var inline func(v any) any
	inline = func(v any) any {
		switch t := v.(type) {
		case string:
			if d, ok := defs[t]; ok && !seen[d.(map[string]any)["name"].(string)] {
				seen[d.(map[string]any)["name"].(string)] = true
				return inline(d)
			}
		case []any:
			for i := range t {
				t[i] = inline(t[i])
			}
		case map[string]any:
			for _, k := range []string{"type", "items", "values", "fields"} {
				if x, ok := t[k]; ok {
					t[k] = inline(x)
				}
			}
		}
		return v
	}
	b, err := json.Marshal(inline(top))
	if err != nil {
		return "", fmt.Errorf("schemas: %w", err)
	}
	return string(b), nil
}
