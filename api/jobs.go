package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// maxJobDocuments bounds the documents of one job request.
const maxJobDocuments = 1000

type jobRequest struct {
	DocumentIDs []string `json:"documentIds"`
	Force       bool     `json:"force"`
}

// readJobRequest decodes a small, strict JSON body.
func readJobRequest(w http.ResponseWriter, r *http.Request, allowForce bool) (jobRequest, error) {
	var req jobRequest
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return req, fmt.Errorf("%w: send application/json", ErrUnsupportedMedia)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 256<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return req, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		return req, fmt.Errorf("%w: body must be a JSON object: %w", ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	if !allowForce && req.Force {
		return req, fmt.Errorf("%w: force is not accepted here", ErrInvalid)
	}
	if len(req.DocumentIDs) == 0 || len(req.DocumentIDs) > maxJobDocuments {
		return req, fmt.Errorf("%w: documentIds must list 1 to %d documents", ErrInvalid, maxJobDocuments)
	}
	seen := map[string]bool{}
	for _, id := range req.DocumentIDs {
		if id == "" || len(id) > 128 || seen[id] {
			return req, fmt.Errorf("%w: documentIds must be distinct, non-empty ids", ErrInvalid)
		}
		seen[id] = true
	}
	return req, nil
}

// loadDocuments loads every requested document of the caller's org; an
// unknown one (or another org's) is a 404, as it is everywhere else.
func (s *Server) loadDocuments(org string, ids []string) ([]domain.Document, error) {
	docs := make([]domain.Document, 0, len(ids))
	for _, id := range ids {
		d, err := s.views.Document(org, id)
		if err != nil {
			return nil, fmt.Errorf("%w: document %s", ErrNotFound, id)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

func (s *Server) processDocuments(w http.ResponseWriter, r *http.Request) {
	req, err := readJobRequest(w, r, true)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.idempotent(w, r, fmt.Sprint(req.DocumentIDs, req.Force), func() (result, error) {
		org := orgOf(r)
		docs, err := s.loadDocuments(org, req.DocumentIDs)
		if err != nil {
			return result{}, err
		}
		jobID := eventstore.NewID("job_")
		annotate(r, "job", jobID)
		events := []domain.Event{&domain.JobCreated{Meta: s.meta(r), JobID: jobID, Kind: domain.JobPreprocess, DocumentIDs: req.DocumentIDs, Force: req.Force}}
		// A forced run reopens every finished preprocess job covering the
		// document, so those jobs follow the new run too.
		reopen := map[string][]string{}
		if req.Force {
			for _, d := range docs {
				covering, err := s.views.DocumentJobs(org, d.ID)
				if err != nil {
					return result{}, err
				}
				for _, id := range covering {
					if j, err := s.views.Job(org, id); err == nil && j.Kind == domain.JobPreprocess && j.Status().Terminal() && j.Status() != domain.JobStatusCancelled {
						reopen[id] = append(reopen[id], d.ID)
					}
				}
			}
			for id, ds := range reopen {
				j, _ := s.views.Job(org, id)
				events = append(events, &domain.JobReopened{Meta: s.meta(r), JobID: id, Generation: j.Generation + 1, DocumentIDs: ds})
			}
		}
		for _, d := range docs {
			jobs := []string{jobID}
			for id, ds := range reopen {
				if slices.Contains(ds, d.ID) {
					jobs = append(jobs, id)
				}
			}
			slices.Sort(jobs[1:])
			if q := d.QueueFor(s.meta(r), domain.PhasePreprocess, jobs, req.Force); q != nil {
				events = append(events, q)
			}
		}
		if err := s.appendAccepted(r.Context(), events...); err != nil {
			return result{}, err
		}
		handle := s.cfg.Handles.Sign(org, Handle{Kind: HandleKindBatchPreprocess, Subject: jobID, Expires: s.expiry()})
		return result{http.StatusAccepted, map[string]any{"jobId": handle}}, nil
	})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	req, err := readJobRequest(w, r, false)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.idempotent(w, r, fmt.Sprint(req.DocumentIDs), func() (result, error) {
		org := orgOf(r)
		docs, err := s.loadDocuments(org, req.DocumentIDs)
		if err != nil {
			return result{}, err
		}
		jobID, sessionID := eventstore.NewID("job_"), eventstore.NewID("ses_")
		events := []domain.Event{&domain.JobCreated{Meta: s.meta(r), JobID: jobID, Kind: domain.JobExtraction, SessionID: &sessionID, DocumentIDs: req.DocumentIDs}}
		for _, d := range docs {
			if q := d.QueueFor(s.meta(r), domain.PhaseExtract, []string{jobID}, false); q != nil {
				events = append(events, q)
			}
		}
		if err := s.appendAccepted(r.Context(), events...); err != nil {
			return result{}, err
		}
		exp := s.expiry()
		return result{http.StatusAccepted, map[string]any{
			"jobId":     s.cfg.Handles.Sign(org, Handle{Kind: HandleKindExtraction, Subject: jobID, Expires: exp}),
			"sessionId": s.cfg.Handles.Sign(org, Handle{Kind: HandleKindSession, Subject: sessionID, Expires: exp}),
		}}, nil
	})
}

func (s *Server) expiry() time.Time { return time.Now().Add(s.cfg.HandleTTL) }

// resolveJob verifies a handle and loads what it names. Every failure is
// the same ErrBadHandle, so the endpoint is no existence oracle.
func (s *Server) resolveJob(r *http.Request) (Handle, domain.Job, domain.Document, error) {
	org := orgOf(r)
	h, err := s.cfg.Handles.Verify(org, mux.Vars(r)["jobId"])
	if err != nil {
		return h, domain.Job{}, domain.Document{}, ErrBadHandle
	}
	annotate(r, "job", h.Subject)
	switch h.Kind {
	case HandleKindBatchPreprocess, HandleKindExtraction:
		j, err := s.views.Job(org, h.Subject)
		if err != nil {
			return h, j, domain.Document{}, ErrBadHandle
		}
		return h, j, domain.Document{}, nil
	case HandleKindDocumentPreprocess:
		docID, attempt, ok := splitRunSubject(h.Subject)
		d, err := s.views.Document(org, docID)
		if !ok || err != nil {
			return h, domain.Job{}, d, ErrBadHandle
		}
		if _, ok := d.Run(attempt); !ok {
			return h, domain.Job{}, d, ErrBadHandle
		}
		return h, domain.Job{}, d, nil
	}
	return h, domain.Job{}, domain.Document{}, ErrBadHandle
}

// DocumentRunSubject is the handle subject of a document's single-document
// preprocess job for one attempt.
func DocumentRunSubject(doc string, attempt int) string { return doc + "/" + strconv.Itoa(attempt) }

func splitRunSubject(s string) (string, int, bool) {
	doc, n, ok := strings.Cut(s, "/")
	attempt, err := strconv.Atoi(n)
	return doc, attempt, ok && err == nil && attempt > 0
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	h, j, d, err := s.resolveJob(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if _, timeTravel, _ := asOf(r); timeTravel {
		// The handle is checked against the present first; then the job is
		// resolved again in the past, where it may not exist yet (404).
		kind, id := projections.HistoryJob, j.ID
		if h.Kind == HandleKindDocumentPreprocess {
			kind, id = projections.HistoryDocument, d.ID
		}
		var done func()
		if s, done, err = s.at(r, kind, id); err != nil {
			writeError(w, r, err)
			return
		}
		defer done()
		if h, j, d, err = s.resolveJob(r); err != nil {
			writeError(w, r, err)
			return
		}
	}
	expand := r.URL.Query().Get("expand") == "documents"
	if h.Kind == HandleKindDocumentPreprocess {
		_, attempt, _ := splitRunSubject(h.Subject)
		run, _ := d.Run(attempt)
		writeJSON(w, r, http.StatusOK, s.renderRun(mux.Vars(r)["jobId"], h, d, run))
		return
	}
	writeJSON(w, r, http.StatusOK, s.renderJob(r, mux.Vars(r)["jobId"], h, j, expand))
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	h, j, d, err := s.resolveJob(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	org, handle := orgOf(r), mux.Vars(r)["jobId"]
	if h.Kind == HandleKindDocumentPreprocess {
		_, attempt, _ := splitRunSubject(h.Subject)
		if attempt == d.Attempt && (d.Status == domain.StatusQueued || d.Status == domain.StatusUploaded) {
			if err := s.appendAccepted(r.Context(), &domain.DocumentCanceled{Meta: s.meta(r), DocumentID: d.ID, Reason: "job cancelled"}); err != nil {
				writeError(w, r, err)
				return
			}
			d, _ = s.views.Document(org, d.ID)
		}
		run, _ := d.Run(attempt)
		writeJSON(w, r, http.StatusAccepted, s.renderRun(handle, h, d, run))
		return
	}
	if !j.Status().Terminal() && !j.CancelRequested {
		events := []domain.Event{&domain.JobCancelRequested{Meta: s.meta(r), JobID: j.ID}}
		var stops []eventstore.WorkItem
		for _, row := range j.Rows {
			if row.Status.Terminal() {
				continue
			}
			// Rows not started are canceled; running ones are told to stop
			// through the work topic, where their worker reads.
			dc, err := s.views.Document(org, row.DocumentID)
			if err != nil || !slices.Contains(dc.JobIDs, j.ID) || s.runServesOthers(org, dc, j.ID) {
				continue
			}
			switch {
			case dc.Status == domain.StatusQueued:
				events = append(events, &domain.DocumentCanceled{Meta: s.meta(r), DocumentID: dc.ID, Reason: "job cancelled"})
			case dc.Status.Running():
				stops = append(stops, eventstore.WorkItem{ID: eventstore.NewID("stop_"), OrgID: org, DocumentID: dc.ID, Attempt: dc.Attempt, Cancel: true})
			}
		}
		if err := s.appendAccepted(r.Context(), events...); err != nil {
			writeError(w, r, err)
			return
		}
		if len(stops) > 0 {
			if err := s.store.AppendWork(r.Context(), stops...); err != nil {
				writeError(w, r, err)
				return
			}
		}
		j, _ = s.views.Job(org, j.ID)
	}
	writeJSON(w, r, http.StatusAccepted, s.renderJob(r, handle, h, j, false))
}

// runServesOthers reports whether the document's run also serves another
// job that is still live: cancelling one job must not take the run from it.
func (s *Server) runServesOthers(org string, d domain.Document, job string) bool {
	for _, id := range d.JobIDs {
		if id == job {
			continue
		}
		if o, err := s.views.Job(org, id); err == nil && !o.CancelRequested && !o.Status().Terminal() {
			return true
		}
	}
	return false
}

func (s *Server) sessionResults(w http.ResponseWriter, r *http.Request) {
	org := orgOf(r)
	h, err := s.cfg.Handles.Verify(org, mux.Vars(r)["sessionId"])
	if err != nil || h.Kind != HandleKindSession {
		writeError(w, r, ErrBadHandle)
		return
	}
	jobID, err := s.views.SessionJob(org, h.Subject)
	if err != nil {
		writeError(w, r, ErrBadHandle)
		return
	}
	j, err := s.views.Job(org, jobID)
	if err != nil {
		writeError(w, r, ErrBadHandle)
		return
	}
	docs := make([]map[string]any, 0, len(j.Rows))
	for _, row := range j.Rows {
		d, _ := s.views.Document(org, row.DocumentID)
		items := []domain.LineItem{}
		if row.Status == domain.RowCompleted && d.LineItems != nil {
			items = d.LineItems
		}
		docs = append(docs, map[string]any{
			"documentId": row.DocumentID, "status": row.Status, "fileName": d.FileName,
			"currency": optional(d.Currency), "lineItems": items,
		})
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"sessionId": mux.Vars(r)["sessionId"], "status": j.Status(), "documents": docs})
}
