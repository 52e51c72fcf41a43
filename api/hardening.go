package api

import (
	"io"
	"net"
	"net/http"
	"time"
)

// perIP applies the per-client-address limit to every /v1 call before the
// key is looked at, so a flood of bad or stolen keys from one address is cut
// off as cheaply as a flood of good ones. The address is the TCP peer's:
// X-Forwarded-For is not trusted (a proxy in front should limit itself).
func (s *Server) perIP(next http.Handler) http.Handler {
	limited := s.limitedByKey(s.byIP, func(r *http.Request) string {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}, next.ServeHTTP)
	return http.HandlerFunc(limited)
}

// bodyDeadline makes a request body that stalls fail: each read must make
// progress within BodyIdleTimeout, and the whole body must arrive within
// BodyTimeout of the request's start. A stalled client gets 408 and its
// connection is closed; it cannot hold a handler (or a half-written upload)
// open. Once the body is read to its end the deadline is lifted, so a
// handler waiting on the log is not cut off by it.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &deadlineBody{rc: r.Body, ctl: http.NewResponseController(w), idle: s.cfg.BodyIdleTimeout, end: time.Now().Add(s.cfg.BodyTimeout)}
		}
		next.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	rc   io.ReadCloser
	ctl  *http.ResponseController
	idle time.Duration
	end  time.Time
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if !b.done {
		d := time.Now().Add(b.idle)
		if d.After(b.end) {
			d = b.end
		}
		_ = b.ctl.SetReadDeadline(d)
	}
	n, err := b.rc.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.ctl.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *deadlineBody) Close() error { return b.rc.Close() }
