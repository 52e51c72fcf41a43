package webhook

import (
	"context"
	"errors"
	"net"
)

// Sentinels. Errors returned by this package wrap one of them; test with
// errors.Is.
var (
	// ErrRefusedAddress: the URL names, or its host name resolved to, an
	// address the client is not allowed to connect to.
	ErrRefusedAddress = errors.New("webhook: refused address")
	// ErrBadURL: the URL is malformed, is not http or https, has no host or
	// carries credentials.
	ErrBadURL = errors.New("webhook: bad URL")
	// ErrBadSecret: the secret is not "whsec_" followed by the base64 of a
	// key of an acceptable length.
	ErrBadSecret = errors.New("webhook: bad secret")
	// ErrBadSignature: the signature headers are missing or malformed, or no
	// signature matches.
	ErrBadSignature = errors.New("webhook: bad signature")
	// ErrTimestamp: webhook-timestamp is too far from the receiver's clock.
	ErrTimestamp = errors.New("webhook: timestamp outside tolerance")
	// ErrStatus: the endpoint answered with a status other than 2xx. The
	// status itself is in Result.Status.
	ErrStatus = errors.New("webhook: endpoint did not answer 2xx")
)

// IsRefused reports whether err means the URL is not allowed at all: a bad
// URL or a refused address. Retrying such a delivery cannot succeed.
func IsRefused(err error) bool {
	return errors.Is(err, ErrRefusedAddress) || errors.Is(err, ErrBadURL)
}

// IsTimeout reports whether err is a delivery that ran out of time, either
// the client's Timeout or a deadline on the caller's context.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
