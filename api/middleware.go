package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/eventstore"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyLogger
	keyOrg
	keyActor
)

func requestID(r *http.Request) string {
	v, _ := r.Context().Value(keyRequestID).(string)
	return v
}

func logger(r *http.Request) *zerolog.Logger {
	if l, ok := r.Context().Value(keyLogger).(*zerolog.Logger); ok {
		return l
	}
	nop := zerolog.Nop()
	return &nop
}

func orgOf(r *http.Request) string   { v, _ := r.Context().Value(keyOrg).(string); return v }
func actorOf(r *http.Request) string { v, _ := r.Context().Value(keyActor).(string); return v }

func errorf(format string, args ...any) error {
	return fmt.Errorf("api: config: "+format, args...)
}

// statusWriter remembers the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines, flushing).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// requestContext gives every request an id (the client's X-Request-Id when it
// is sane), a logger carrying it, and an access log line.
func (s *Server) requestContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := r.Header.Get("X-Request-Id")
		if rid == "" || len(rid) > 128 || strings.ContainsFunc(rid, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
			rid = eventstore.NewID("req_")
		}
		w.Header().Set("X-Request-Id", rid)
		l := s.log.With().Str("request_id", rid).Logger()
		st := &reqState{route: "unmatched", noted: map[string]string{}}
		ctx := context.WithValue(context.WithValue(r.Context(), keyRequestID, rid), keyLogger, &l)
		ctx = context.WithValue(ctx, keyRoute{}, st)
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		next.ServeHTTP(sw, r.WithContext(ctx))
		took := time.Since(start)
		// l carries the fields handlers added (org, document, job).
		l.Info().Str("method", r.Method).Str("path", r.URL.Path).Str("route", st.route).Int("status", sw.status).
			Dur("took", took).Msg("request")
		s.observeRequest(st.route, r.Method, sw.status, took)
	})
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logger(r).Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("handler panic")
				writeError(w, r, fmt.Errorf("%w: panic", errInternal))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// authenticate resolves "Authorization: Bearer <key>" to an org. Keys are
// looked up by their SHA-256, the only form the log and views keep.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		// The scheme is case-insensitive (RFC 9110 §11.1).
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > 256 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="docket"`)
			writeError(w, r, ErrUnauthorized)
			return
		}
		key, err := s.views.KeyByHash(HashKey(strings.TrimSpace(token)))
		if err != nil || key.Revoked {
			w.Header().Set("WWW-Authenticate", `Bearer realm="docket", error="invalid_token"`)
			writeError(w, r, ErrUnauthorized)
			return
		}
		ctx := context.WithValue(r.Context(), keyOrg, key.OrgID)
		ctx = context.WithValue(ctx, keyActor, "key:"+key.ID)
		annotate(r, "org", key.OrgID)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// HashKey is the stored form of an API key.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
