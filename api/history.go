package api

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/projections"
)

// History pages: longer than listings by default, since a console shows
// an entity's whole life at once.
const defaultHistoryPage = 100

// historyEventJSON is one event of an entity's history.
type historyEventJSON struct {
	Partition     int32          `json:"partition"`
	Offset        int64          `json:"offset"`
	Type          string         `json:"type"`
	EventID       string         `json:"event_id"`
	OccurredAt    string         `json:"occurred_at"`
	Actor         string         `json:"actor"`
	CorrelationID string         `json:"correlation_id"`
	Payload       map[string]any `json:"payload"`
}

// redacted replaces secrets in history payloads: webhook signing secrets
// and API key hashes are in the log, but never shown again.
const redacted = "[redacted]"

var secretFields = map[string]bool{"secret": true, "key_hash": true}

func (s *Server) documentHistory(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if _, err := s.views.Document(orgOf(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	s.writeHistory(w, r, projections.HistoryDocument, id)
}

// batchHistory answers for live batches and for deleted ones that have a
// history; a name that never had one is unknown.
func (s *Server) batchHistory(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	if _, err := s.views.Batch(orgOf(r), name); err != nil {
		h, _, herr := s.views.History(projections.HistoryBatch, orgOf(r), name, "", 1)
		if herr != nil || len(h) == 0 {
			writeError(w, r, err)
			return
		}
	}
	s.writeHistory(w, r, projections.HistoryBatch, name)
}

// jobHistory: a single-document preprocess job is a run of its document,
// derived from the document's fold, so its history is the document's.
func (s *Server) jobHistory(w http.ResponseWriter, r *http.Request) {
	h, j, d, err := s.resolveJob(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if h.Kind == HandleKindDocumentPreprocess {
		s.writeHistory(w, r, projections.HistoryDocument, d.ID)
		return
	}
	s.writeHistory(w, r, projections.HistoryJob, j.ID)
}

func (s *Server) writeHistory(w http.ResponseWriter, r *http.Request, kind projections.HistoryKind, id string) {
	limit, cursor, err := s.page(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if r.URL.Query().Get("limit") == "" {
		limit = defaultHistoryPage
	}
	entries, next, err := s.views.History(kind, orgOf(r), id, cursor, limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]historyEventJSON, len(entries))
	for i, e := range entries {
		m := e.Event.Header()
		out[i] = historyEventJSON{
			Partition: e.Partition, Offset: e.Offset, Type: e.Event.Type(),
			EventID: m.EventID, OccurredAt: m.OccurredAt.UTC().Format(time.RFC3339Nano),
			Actor: m.Actor, CorrelationID: m.CorrelationID, Payload: eventPayload(e.Event),
		}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"events": out, "next_cursor": nextCursor(next)})
}

// eventPayload renders an event's fields other than meta under their Avro
// names, with secrets redacted.
func eventPayload(e domain.Event) map[string]any {
	out, _ := avroJSON(reflect.ValueOf(e)).(map[string]any)
	delete(out, "meta")
	for k, v := range out {
		if secretFields[k] && v != "" {
			out[k] = redacted
		}
	}
	return out
}

// avroJSON converts a value of an event struct to JSON values as Avro's
// JSON view of it has them: records keyed by Avro field name, null for an
// absent optional value, arrays never null; times as RFC 3339 strings.
func avroJSON(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return avroJSON(v.Elem())
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			return t.UTC().Format(time.RFC3339Nano)
		}
		out := map[string]any{}
		for i := range v.NumField() {
			name := v.Type().Field(i).Tag.Get("avro")
			if name == "" || name == "-" {
				continue
			}
			out[name] = avroJSON(v.Field(i))
		}
		return out
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Bytes() // base64 in JSON
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = avroJSON(v.Index(i))
		}
		return out
	}
	return v.Interface()
}

// asOf reads ?as_of=, an RFC 3339 time no later than now; ok is false when
// it is absent.
func asOf(r *http.Request) (t time.Time, ok bool, err error) {
	v := r.URL.Query().Get("as_of")
	if v == "" && !r.URL.Query().Has("as_of") {
		return t, false, nil
	}
	t, err = time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, true, fmt.Errorf("%w: as_of must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", ErrInvalid)
	}
	if t.After(time.Now()) {
		return t, true, fmt.Errorf("%w: as_of %s is in the future", ErrInvalid, strconv.Quote(v))
	}
	return t, true, nil
}

// at returns the server to answer a GET with: s itself, or, with ?as_of=,
// a copy whose views hold the entity as it was then (projections.At).
// done releases those views.
func (s *Server) at(r *http.Request, kind projections.HistoryKind, id string) (srv *Server, done func(), err error) {
	t, ok, err := asOf(r)
	if err != nil || !ok {
		return s, func() {}, err
	}
	past, err := s.views.At(kind, orgOf(r), id, t)
	if err != nil {
		return nil, nil, err
	}
	c := *s
	c.views, c.asOf = past, t
	return &c, func() { past.Close() }, nil
}

// now is the time the server answers for: as_of when time travelling.
func (s *Server) now() time.Time {
	if !s.asOf.IsZero() {
		return s.asOf
	}
	return time.Now()
}
