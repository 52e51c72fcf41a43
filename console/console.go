package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"path"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every console response: only the
// console's own script and style, fetches to this origin, no frames, no
// form submission, no inline code.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// File is one embedded console file.
type File struct {
	Body        []byte
	ContentType string
	ETag        string
}

var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// Lookup returns the named file ("" is the page itself); ok is false for
// anything that is not a console file.
func Lookup(name string) (f File, ok bool) {
	if name == "" {
		name = "index.html"
	}
	ct, known := types[path.Ext(name)]
	if !known || path.Base(name) != name {
		return File{}, false
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		return File{}, false
	}
	sum := sha256.Sum256(b)
	return File{Body: b, ContentType: ct, ETag: `"` + hex.EncodeToString(sum[:8]) + `"`}, true
}
