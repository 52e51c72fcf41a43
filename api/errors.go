package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// Sentinels for conditions the API itself detects.
var (
	ErrUnauthorized        = errors.New("api: missing, malformed or revoked API key")
	ErrNotFound            = errors.New("api: not found")
	ErrInvalid             = errors.New("api: invalid request")
	ErrTooLarge            = errors.New("api: request body too large")
	ErrUnsupportedMedia    = errors.New("api: unsupported content type")
	ErrRateLimited         = errors.New("api: rate limit exceeded")
	ErrIdempotencyMismatch = errors.New("api: idempotency key was used with a different request")
	ErrIdempotencyInFlight = errors.New("api: a request with this idempotency key is still in progress")
	ErrMethodNotAllowed    = errors.New("api: method not allowed")
	ErrUnavailable         = errors.New("api: temporarily unavailable")
	ErrRequestTimeout      = errors.New("api: request body not received in time")
	errInternal            = errors.New("api: internal error")
)

// envelope is the error body of every non-2xx response.
type envelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// classify is the one mapping from errors to HTTP statuses and error codes.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, ErrNotFound), errors.Is(err, projections.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, ErrTooLarge), errors.Is(err, blobstore.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "payload_too_large"
	case errors.Is(err, blobstore.ErrEmpty):
		return http.StatusBadRequest, "empty_file"
	case errors.Is(err, ErrRequestTimeout), errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout, "request_timeout"
	case errors.Is(err, ErrInvalid), domain.IsInvalid(err), blobstore.IsClientError(err), errors.Is(err, projections.ErrBadCursor):
		return http.StatusBadRequest, "invalid_request"
	case errors.Is(err, ErrUnsupportedMedia):
		return http.StatusUnsupportedMediaType, "unsupported_media_type"
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests, "rate_limited"
	case errors.Is(err, ErrIdempotencyMismatch):
		return http.StatusUnprocessableEntity, "idempotency_key_reused"
	case errors.Is(err, ErrIdempotencyInFlight):
		return http.StatusConflict, "idempotency_key_in_progress"
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed, "method_not_allowed"
	case domain.IsConflict(err):
		return http.StatusConflict, "conflict"
	case errors.Is(err, ErrUnavailable), eventstore.IsRetryable(err), errors.Is(err, projections.ErrNotCaughtUp):
		return http.StatusServiceUnavailable, "unavailable"
	}
	return http.StatusInternalServerError, "internal_error"
}

// errorResponse renders err as status and envelope, and the message a
// client may see: internal details stay in the log.
func errorResponse(err error, requestID string) (int, envelope) {
	status, code := classify(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		msg = errInternal.Error()
	}
	return status, envelope{Error: errorBody{Code: code, Message: msg, RequestID: requestID}}
}

// writeError writes err as the error envelope.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := errorResponse(err, requestID(r))
	if status == http.StatusInternalServerError {
		logger(r).Error().Err(err).Msg("internal error")
	}
	if status == http.StatusRequestTimeout {
		// The rest of the body may still come: do not read it as a request.
		w.Header().Set("Connection", "close")
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(2))
	}
	writeJSON(w, r, status, body)
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	// Encoded before anything is sent: a value JSON cannot carry answers
	// 500 with the envelope, where streaming it sent 200 and a body cut
	// short (a NaN line item from another writer of the log did, until
	// the fold refused those).
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if _, isEnvelope := v.(envelope); isEnvelope {
			http.Error(w, errInternal.Error(), http.StatusInternalServerError)
			return
		}
		writeError(w, r, fmt.Errorf("api: encode the response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// jsonBuffers holds writeJSON's buffers; one larger than 1 MiB (a long
// listing) is left to the collector rather than kept.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putJSONBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		b.Reset()
		jsonBuffers.Put(b)
	}
}
