package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// NewAPIKey makes a secret key and the event that records it. The log and
// the views keep only the key's SHA-256; the secret is shown to the caller
// once.
func NewAPIKey(meta domain.Meta, label string) (string, *domain.ApiKeyIssued) {
	key := "dk_" + eventstore.Secret(30)
	return key, &domain.ApiKeyIssued{Meta: meta, KeyID: eventstore.NewID("key_"), KeyHash: HashKey(key), Label: label}
}

// validateLabel accepts up to 100 printable characters of valid UTF-8.
func validateLabel(label string) error {
	if len(label) > 100 || !utf8.ValidString(label) || strings.ContainsFunc(label, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Errorf("%w: label must be at most 100 printable characters", ErrInvalid)
	}
	return nil
}

func renderKey(k domain.ApiKey) map[string]any {
	return map[string]any{"id": k.ID, "label": k.Label, "revoked": k.Revoked}
}

// createKey issues another key for the caller's org (for rotation: issue the
// new key, deploy it, revoke the old one).
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Label string `json:"label"`
	}
	if r.ContentLength != 0 {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			writeError(w, r, fmt.Errorf("%w: send application/json", ErrUnsupportedMedia))
			return
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
		if err != nil {
			writeError(w, r, jsonBodyError(err, `{"label": ...}`))
			return
		}
		// An empty body is no label; anything else must be one object.
		if raw = bytes.TrimSpace(raw); len(raw) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if raw[0] != '{' {
				writeError(w, r, fmt.Errorf("%w: body must be {\"label\": ...}", ErrInvalid))
				return
			}
			if err := dec.Decode(&req); err != nil {
				writeError(w, r, jsonBodyError(err, `{"label": ...}`))
				return
			}
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				writeError(w, r, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid))
				return
			}
		}
	}
	if err := validateLabel(req.Label); err != nil {
		writeError(w, r, err)
		return
	}
	// Not idempotent on purpose: a replayed answer would have to keep the
	// secret, and only its hash may be stored. A retried request makes a
	// second key, which the caller can revoke.
	key, ev := NewAPIKey(s.meta(r), req.Label)
	if err := s.appendAndWait(r.Context(), ev); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusCreated, map[string]any{"id": ev.KeyID, "label": ev.Label, "revoked": false, "key": key})
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.views.OrgKeys(orgOf(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]map[string]any, len(keys))
	for i, k := range keys {
		out[i] = renderKey(k)
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"api_keys": out})
}

// revokeKey revokes one of the org's keys, the caller's own included. The
// revocation is an event: every node that applies it refuses the key, and
// this node has applied it before answering. Revoking a revoked key is a
// no-op that answers the same.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.views.OrgKey(orgOf(r), mux.Vars(r)["id"])
	if err != nil {
		writeError(w, r, err)
		return
	}
	if !k.Revoked {
		if err := s.appendAndWait(r.Context(), &domain.ApiKeyRevoked{Meta: s.meta(r), KeyID: k.ID}); err != nil {
			writeError(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
