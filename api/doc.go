// Package api serves docket's HTTP surfaces with gorilla/mux.
//
// Handlers check commands against the read model for a fast, clear error,
// append events, and answer only after the local projection has applied
// their own events (read your writes), so a client that uploads and then
// immediately reads never sees a 404. All errors leave through one function,
// writeError, which is the only place that maps errors to HTTP statuses.
package api
