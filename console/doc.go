// Package console is docket's operator console: one HTML page, a style
// sheet and a small vanilla script, embedded in the binary with go:embed
// and served by the API at /console. There is no build step.
//
// The script calls the public /v1 API with the API key the operator types
// in. The key lives in the tab's sessionStorage and travels only in the
// Authorization header: never in a URL (the sign-in form has no named
// fields and the Content-Security-Policy forbids form submission), so it
// cannot reach access logs, history or Referer headers. Live updates read
// the SSE streams with fetch(), which can send the header, instead of
// EventSource, which cannot.
package console
