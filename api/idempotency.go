package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// result is what a command handler produces: a status and a JSON body.
type result struct {
	status int
	body   any
}

// idempotent runs cmd at most once per Idempotency-Key (when the request has
// one). fingerprint describes the request's meaning, so that a retry that
// differs only in encoding (a new multipart boundary) still matches. The key
// is claimed through the log, so every node agrees on who runs it.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, fingerprint string, cmd func() (result, error)) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		res, err := cmd()
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, r, res.status, res.body)
		return
	}
	if err := validIdempotencyKey(key); err != nil {
		writeError(w, r, err)
		return
	}
	org := orgOf(r)
	sum := sha256.Sum256([]byte(r.Method + " " + r.URL.Path + "\n" + fingerprint))
	hash := hex.EncodeToString(sum[:])

	claim := eventstore.NewID("idk_")
	for attempt := 0; ; attempt++ {
		rec, err := s.views.Idempotency(org, key)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if rec.ClaimID == claim {
			break // ours: run the command
		}
		switch rec.Check(hash, time.Now()) {
		case domain.VerdictReplay:
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.Status)
			_, _ = w.Write(rec.Body)
			return
		case domain.VerdictMismatch:
			writeError(w, r, ErrIdempotencyMismatch)
			return
		case domain.VerdictInProgress:
			writeError(w, r, ErrIdempotencyInFlight)
			return
		}
		if attempt > 0 {
			writeError(w, r, ErrIdempotencyInFlight)
			return
		}
		ev := &domain.IdempotencyKeyClaimed{Meta: s.meta(r), Key: key, RequestHash: hash, ClaimID: claim}
		if err := s.appendAndWait(r.Context(), ev); err != nil {
			writeError(w, r, err)
			return
		}
	}

	res, err := cmd()
	var body []byte
	status := res.status
	if err != nil {
		var env envelope
		status, env = errorResponse(err, requestID(r))
		body, _ = json.Marshal(env)
		if status == http.StatusInternalServerError {
			logger(r).Error().Err(err).Msg("internal error")
		}
	} else {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(res.body)
		body = buf.Bytes()
	}
	// A failure the client may retry releases the key; anything else is
	// remembered and replayed.
	var done domain.Event = &domain.IdempotencyKeyCompleted{Meta: s.meta(r), Key: key, ClaimID: claim, Status: status, Body: body}
	if status >= 500 {
		done = &domain.IdempotencyKeyReleased{Meta: s.meta(r), Key: key, ClaimID: claim}
	}
	if errors.Is(err, errOutcomeUnknown) {
		// The command's events may still be written: releasing the key
		// would let a retry do it twice. The claim stays (retries get 409)
		// until it expires (domain.IdempotencyClaimTimeout).
		done = nil
	}
	// Answer only once the local views hold the record (read your writes):
	// a client retrying right after this answer must get the replay, not
	// "in progress".
	ctx := context.WithoutCancel(r.Context())
	if done == nil {
		logger(r).Warn().Err(err).Msg("write outcome unknown; the idempotency claim expires by itself")
	} else if pos, aerr := s.append(ctx, done); aerr != nil {
		logger(r).Warn().Err(aerr).Msg("idempotency record not stored; the claim expires by itself")
	} else {
		_ = s.wait(ctx, pos)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "2")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// validIdempotencyKey accepts 1 to 255 printable ASCII characters
// (space included), the form the log records and the OpenAPI describes.
func validIdempotencyKey(key string) error {
	if key == "" || len(key) > 255 || strings.ContainsFunc(key, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
		return fmt.Errorf("%w: Idempotency-Key must be 1 to 255 printable ASCII characters", ErrInvalid)
	}
	return nil
}

// meta stamps an event with the request's org, actor and request id.
func (s *Server) meta(r *http.Request) domain.Meta {
	return eventstore.NewMeta(orgOf(r), actorOf(r), requestID(r))
}

// appendAndWait appends and waits until the local views applied the events.
// A write that was appended is accepted even if the wait times out; the
// caller decides how to answer then (see wait).
func (s *Server) appendAndWait(ctx context.Context, events ...domain.Event) error {
	pos, err := s.append(ctx, events...)
	if err != nil {
		return err
	}
	return s.wait(ctx, pos)
}

// appendAccepted appends, then waits for the local views: an append error
// fails the request, a slow view does not (the write is accepted and the
// views catch up).
func (s *Server) appendAccepted(ctx context.Context, events ...domain.Event) error {
	pos, err := s.append(ctx, events...)
	if err != nil {
		return err
	}
	_ = s.wait(ctx, pos)
	return nil
}

func (s *Server) wait(ctx context.Context, pos []eventstore.Position) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteWait)
	defer cancel()
	return s.views.WaitAll(ctx, pos)
}
