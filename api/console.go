package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/docket/docket/console"
)

// serveConsole serves the operator console's page (/console) and files
// (/console/{asset}) from the binary. The console is public like
// /openapi.json: it holds no data, and every call it makes needs a key.
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request) {
	f, ok := console.Lookup(mux.Vars(r)["asset"])
	if !ok {
		writeError(w, r, ErrNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", console.CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.ETag)
	if r.Header.Get("If-None-Match") == f.ETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", f.ContentType)
	_, _ = w.Write(f.Body)
}
