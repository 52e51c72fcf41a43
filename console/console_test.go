package console

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"": "text/html", "app.js": "text/javascript", "app.css": "text/css"} {
		f, ok := Lookup(name)
		if !ok || !strings.HasPrefix(f.ContentType, want) || len(f.Body) == 0 || f.ETag == "" {
			t.Errorf("Lookup(%q) = %v, %v", name, f.ContentType, ok)
		}
	}
	for _, name := range []string{"../console.go", "assets/app.js", "index.htm", "missing.js", "x/../app.js"} {
		if _, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) found a file", name)
		}
	}
}

// TestPageHasNoInlineCode keeps the page within the CSP: no inline script
// or style, and the key field has no name (a form fallback could never
// put it in a URL).
func TestPageHasNoInlineCode(t *testing.T) {
	t.Parallel()
	f, _ := Lookup("")
	page := string(f.Body)
	for _, bad := range []string{"<script>", "style=", "onclick", "<style"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(page, `id="api-key"`) || strings.Contains(page, `name="key"`) {
		t.Error("the API key field must exist and have no name")
	}
}
