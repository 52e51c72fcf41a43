package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/projections"
)

func batchName(r *http.Request) (string, error) {
	name := mux.Vars(r)["batch_name"]
	if err := domain.ValidateBatchName(name); err != nil {
		return "", err
	}
	return name, nil
}

// batchPath reads {batch_name}; a name that cannot exist is answered like
// an unknown batch (404), and ok is false.
func (s *Server) batchPath(w http.ResponseWriter, r *http.Request) (string, bool) {
	name, err := batchName(r)
	if err != nil {
		writeError(w, r, fmt.Errorf("%w: %w", ErrNotFound, err))
		return "", false
	}
	return name, true
}

// page reads ?limit= and ?cursor=. Cursors are opaque to clients.
func (s *Server) page(r *http.Request) (limit int, cursor string, err error) {
	limit = s.cfg.PageSize
	if v := r.URL.Query().Get("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > MaxPageSize {
			return 0, "", fmt.Errorf("%w: limit must be an integer from 1 to %d", ErrInvalid, MaxPageSize)
		}
		limit = n
	}
	if v := r.URL.Query().Get("cursor"); v != "" {
		b, derr := base64.RawURLEncoding.DecodeString(v)
		if derr != nil || len(b) == 0 || len(b) > 512 {
			return 0, "", fmt.Errorf("%w: malformed cursor", ErrInvalid)
		}
		cursor = string(b)
	}
	return limit, cursor, nil
}

func nextCursor(c string) *string {
	if c == "" {
		return nil
	}
	s := base64.RawURLEncoding.EncodeToString([]byte(c))
	return &s
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	s, done, err := s.at(r, projections.HistoryBatch, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer done()
	b, err := s.views.Batch(orgOf(r), name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := renderBatch(b)
	// Delivery state is not replayed by time travel (projections.At).
	if n, ok := s.views.LastNotification(orgOf(r), name, true); ok && s.asOf.IsZero() {
		out.LastDelivery = renderDeliveries([]domain.Notification{n})[0]
	}
	writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := s.page(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	bs, next, err := s.views.Batches(orgOf(r), cursor, limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]batchJSON, len(bs))
	for i, b := range bs {
		out[i] = renderBatch(b)
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"batches": out, "next_cursor": nextCursor(next)})
}

func (s *Server) batchResults(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	limit, cursor, err := s.page(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	org := orgOf(r)
	b, err := s.views.Batch(org, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	docs, next, err := s.views.BatchDocuments(org, name, cursor, limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]documentJSON, len(docs))
	for i, d := range docs {
		out[i] = renderDocument(d)
	}
	writeJSON(w, r, http.StatusOK, map[string]any{
		"batch": renderBatch(b), "documents": out, "next_cursor": nextCursor(next),
	})
}

func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	s, done, err := s.at(r, projections.HistoryDocument, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer done()
	d, err := s.views.Document(orgOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, renderDocument(d))
}

// allDocuments loads every document of a batch (for commands over a batch).
func (s *Server) allDocuments(org, name string) ([]domain.Document, error) {
	var all []domain.Document
	cursor := ""
	for {
		docs, next, err := s.views.BatchDocuments(org, name, cursor, MaxPageSize)
		if err != nil {
			return nil, err
		}
		all = append(all, docs...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

func (s *Server) processBatch(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	retry := false
	if v := r.URL.Query().Get("retry_failed"); v != "" {
		var err error
		if retry, err = strconv.ParseBool(v); err != nil {
			writeError(w, r, fmt.Errorf("%w: retry_failed must be true or false", ErrInvalid))
			return
		}
	}
	s.idempotent(w, r, "retry_failed="+strconv.FormatBool(retry), func() (result, error) {
		org := orgOf(r)
		if _, err := s.views.Batch(org, name); err != nil {
			return result{}, err
		}
		docs, err := s.allDocuments(org, name)
		if err != nil {
			return result{}, err
		}
		var events []domain.Event
		for _, d := range docs {
			if d.WantsProcessing(retry) {
				events = append(events, d.NextQueue(s.meta(r), domain.PhaseFull, nil, false))
			}
		}
		if len(events) > 0 {
			pos, err := s.append(r.Context(), events...)
			if err != nil {
				return result{}, err
			}
			_ = s.wait(r.Context(), pos) // accepted either way; the view catches up
		}
		b, err := s.views.Batch(org, name)
		if err != nil {
			return result{}, err
		}
		return result{http.StatusAccepted, map[string]any{"queued": len(events), "batch": renderBatch(b)}}, nil
	})
}

func (s *Server) deleteBatch(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	org := orgOf(r)
	if _, err := s.views.Batch(org, name); err != nil {
		writeError(w, r, err)
		return
	}
	docs, err := s.allDocuments(org, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.appendAndWait(r.Context(), &domain.BatchDeleted{Meta: s.meta(r), BatchName: name}); err != nil {
		writeError(w, r, err)
		return
	}
	// Report what the fold decided, document by document.
	counts := map[domain.Public]int{}
	for _, d := range docs {
		if now, err := s.views.Document(org, d.ID); err == nil {
			counts[now.Status.BatchStatus()]++
		}
	}
	writeJSON(w, r, http.StatusAccepted, map[string]any{"name": name, "deleted": true, "documents": len(docs), "counts": counts})
}
