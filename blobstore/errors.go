package blobstore

import "errors"

// Sentinel errors. Callers classify with errors.Is (or the predicates below),
// never by message, because returned errors usually wrap these with detail.
var (
	// ErrEmpty is returned by Put for a body with no bytes: an empty
	// document is almost always a client bug, and storing it would give
	// every such bug the same well-known key.
	ErrEmpty = errors.New("blobstore: blob is empty")
	// ErrTooLarge is returned by Put when the body exceeds the size limit.
	ErrTooLarge = errors.New("blobstore: blob exceeds size limit")
	// ErrNotFound is returned by Open and Stat for a well-formed key that
	// has no blob.
	ErrNotFound = errors.New("blobstore: blob not found")
	// ErrInvalidKey is returned for a key that is not 64 lowercase hex
	// characters. It is checked before the filesystem is touched.
	ErrInvalidKey = errors.New("blobstore: invalid key")
)

// IsClientError reports whether err was caused by the caller's input (an
// empty or oversized body, or a malformed key) rather than by the store, so
// an API can answer 4xx instead of 5xx.
func IsClientError(err error) bool {
	return errors.Is(err, ErrEmpty) ||
		errors.Is(err, ErrTooLarge) ||
		errors.Is(err, ErrInvalidKey)
}

// IsNotFound reports whether err means the requested blob does not exist.
func IsNotFound(err error) bool {
	return errors.Is(err, ErrNotFound)
}
