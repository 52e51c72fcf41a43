package api

import (
	_ "embed"
	"net/http"
)

//go:embed openapi.json
var openapi []byte

// OpenAPI returns the embedded OpenAPI description.
func OpenAPI() []byte { return openapi }

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapi)
}
