package extract

import (
	"context"
	"errors"
	"fmt"
)

// Error codes. They are part of the API: the worker stores them in events and
// decides from them whether a failure is worth retrying, so they never change
// spelling.
const (
	CodeUnsupportedFormat = "unsupported_format"
	CodeCorruptDocument   = "corrupt_document"
	CodeEmptyDocument     = "empty_document"
	CodeOCRUnavailable    = "ocr_unavailable"
	CodeTooManyPages      = "too_many_pages"
	CodeTimeout           = "timeout"
	CodeInternal          = "internal_error"
	// CodeResultTooLarge is the worker's, not the extractor's: the result
	// (its line items) is larger than one event on the log may be.
	CodeResultTooLarge = "result_too_large"
)

// Error is the only error type the package returns, so that callers can
// classify every failure with Code instead of matching message text.
type Error struct {
	Code    string
	Message string
	// Err is the underlying cause, if any; it is kept for errors.Is/As and
	// logging, never for classification.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap exposes the cause so errors.Is(err, context.Canceled) keeps working.
func (e *Error) Unwrap() error { return e.Err }

func newError(code string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: "extract: " + fmt.Sprintf(format, args...), Err: cause}
}

// Code classifies any error. Context errors count as timeouts whether the
// deadline passed or the caller gave up: in both cases the document itself
// is fine and the work can be tried again. Anything unknown is internal,
// because a caller cannot act on an error it does not understand.
func Code(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return CodeTimeout
	}
	return CodeInternal
}

// ctxError turns a context error into an *Error so that callers get one type.
func ctxError(err error) *Error {
	return newError(CodeTimeout, err, "processing stopped before it finished")
}
