package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/webhook"
)

// putBatchWebhook registers (or replaces) a batch's webhook and returns its
// signing secret, this once.
func (s *Server) putBatchWebhook(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, r, fmt.Errorf("%w: send application/json", ErrUnsupportedMedia))
		return
	}
	var req struct {
		URL string `json:"url"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, r, jsonBodyError(err, `{"url": ...}`))
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, r, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid))
		return
	}
	if err := s.checkWebhookURL(req.URL); err != nil {
		writeError(w, r, err)
		return
	}
	org := orgOf(r)
	if _, err := s.views.Batch(org, name); err != nil {
		writeError(w, r, err)
		return
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.appendAccepted(r.Context(), &domain.BatchWebhookSet{Meta: s.meta(r), BatchName: name, URL: req.URL, Secret: secret}); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"batch_name": name, "url": req.URL, "secret": secret})
}

func (s *Server) getBatchWebhook(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	hook, err := s.views.BatchWebhook(orgOf(r), name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"batch_name": name, "url": hook.URL})
}

func (s *Server) deleteBatchWebhook(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	if _, err := s.views.BatchWebhook(orgOf(r), name); err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.appendAccepted(r.Context(), &domain.BatchWebhookRemoved{Meta: s.meta(r), BatchName: name}); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// batchDeliveries lists a batch's notifications with their delivery state.
func (s *Server) batchDeliveries(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	// An unknown batch (or another org's) is 404 as on every batch route,
	// not an empty list.
	if _, err := s.views.Batch(orgOf(r), name); err != nil {
		writeError(w, r, err)
		return
	}
	ns, err := s.views.BatchNotifications(orgOf(r), name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"batch_name": name, "deliveries": renderDeliveries(ns)})
}

// createEndpoint subscribes a URL to job-surface events and returns its
// signing secret, this once.
func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, r, fmt.Errorf("%w: send application/json", ErrUnsupportedMedia))
		return
	}
	var req struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, r, jsonBodyError(err, `{"url", "events"}`))
		return
	}
	if err := s.checkWebhookURL(req.URL); err != nil {
		writeError(w, r, err)
		return
	}
	if len(req.Events) == 0 {
		writeError(w, r, fmt.Errorf("%w: events must name at least one of %v", ErrInvalid, domain.EndpointEvents))
		return
	}
	for _, e := range req.Events {
		if !slices.Contains(domain.EndpointEvents, e) {
			writeError(w, r, fmt.Errorf("%w: unknown event %q (one of %v)", ErrInvalid, e, domain.EndpointEvents))
			return
		}
	}
	s.idempotent(w, r, req.URL+"\x00"+strings.Join(req.Events, ","), func() (result, error) {
		secret, err := webhook.NewSecret()
		if err != nil {
			return result{}, err
		}
		ev := &domain.WebhookEndpointCreated{Meta: s.meta(r), EndpointID: eventstore.NewID("ep_"), URL: req.URL, Events: req.Events, Secret: secret}
		if err := s.appendAccepted(r.Context(), ev); err != nil {
			return result{}, err
		}
		return result{http.StatusCreated, map[string]any{"id": ev.EndpointID, "url": ev.URL, "events": ev.Events, "secret": secret, "createdAt": ts(ev.Meta.OccurredAt)}}, nil
	})
}

func renderEndpoint(e domain.Endpoint) map[string]any {
	return map[string]any{"id": e.ID, "url": e.URL, "events": e.Events, "disabled": e.Disabled, "createdAt": ts(e.CreatedAt)}
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	eps, err := s.views.Endpoints(orgOf(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]map[string]any, len(eps))
	for i, e := range eps {
		out[i] = renderEndpoint(e)
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"endpoints": out})
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request) {
	e, err := s.views.Endpoint(orgOf(r), mux.Vars(r)["id"])
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, renderEndpoint(e))
}

func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	e, err := s.views.Endpoint(orgOf(r), mux.Vars(r)["id"])
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.appendAccepted(r.Context(), &domain.WebhookEndpointDeleted{Meta: s.meta(r), EndpointID: e.ID}); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) endpointDeliveries(w http.ResponseWriter, r *http.Request) {
	org, id := orgOf(r), mux.Vars(r)["id"]
	if _, err := s.views.Endpoint(org, id); err != nil {
		writeError(w, r, err)
		return
	}
	ns, err := s.views.EndpointNotifications(org, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"endpointId": id, "deliveries": renderDeliveries(ns)})
}

func renderDeliveries(ns []domain.Notification) []map[string]any {
	out := make([]map[string]any, len(ns))
	for i, n := range ns {
		out[i] = map[string]any{
			"notification_id": n.ID, "type": n.EventType, "state": n.State, "attempts": n.Attempts,
			"last_status": n.LastStatus, "last_outcome": optional(n.LastOutcome), "last_error": optional(n.LastError),
			"created_at": ts(n.CreatedAt), "last_attempt_at": ts(n.LastAt), "next_attempt_at": ts(n.NextAt),
		}
	}
	return out
}

// redeliver sends a finished notification again (same webhook-id). The
// notification must belong to the batch or endpoint named in the path.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, target string, endpoint bool) {
	org := orgOf(r)
	n, err := s.views.Notification(org, mux.Vars(r)["notification_id"])
	if err != nil || n.Target != target || n.Endpoint != endpoint {
		writeError(w, r, fmt.Errorf("%w: notification", ErrNotFound))
		return
	}
	if !n.Pending() {
		if err := s.appendAccepted(r.Context(), &domain.WebhookRedeliveryRequested{Meta: s.meta(r), NotificationID: n.ID}); err != nil {
			writeError(w, r, err)
			return
		}
		n, _ = s.views.Notification(org, n.ID)
	}
	writeJSON(w, r, http.StatusAccepted, renderDeliveries([]domain.Notification{n})[0])
}

func (s *Server) redeliverBatch(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	s.redeliver(w, r, name, false)
}

func (s *Server) redeliverEndpoint(w http.ResponseWriter, r *http.Request) {
	s.redeliver(w, r, mux.Vars(r)["id"], true)
}

// jsonBodyError classifies a failure to decode a small JSON body.
func jsonBodyError(err error, shape string) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %w", ErrRequestTimeout, err)
	}
	return fmt.Errorf("%w: body must be %s: %w", ErrInvalid, shape, err)
}

// checkWebhookURL applies the registration rules shared by batch webhooks
// and endpoints: a bounded length and the SSRF rules of webhook.ValidateURL.
func (s *Server) checkWebhookURL(url string) error {
	if len(url) > 2048 {
		return fmt.Errorf("%w: url longer than 2048 characters", ErrInvalid)
	}
	if err := webhook.ValidateURL(url, s.cfg.WebhookAllowPrivate, s.cfg.WebhookAllowLoopback); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}
