package api

import (
	"net/http"
	"time"

	"github.com/docket/docket/domain"
)

// Job views on the jobs surface, which speaks camelCase.

type rowJSON struct {
	DocumentID string                  `json:"documentId"`
	Status     domain.RowStatus        `json:"status"`
	Error      *domain.ProcessingError `json:"error,omitempty"`
	FileName   *string                 `json:"fileName,omitempty"`
	NumPages   *int                    `json:"numPages,omitempty"`
	Reference  *string                 `json:"reference,omitempty"`
}

func (s *Server) timing(created, started, completed, last time.Time, h Handle, terminal bool) map[string]any {
	out := map[string]any{
		"createdAt": ts(created), "startedAt": ts(started), "completedAt": ts(completed),
		"expiresAt": ts(h.Expires), "lastProgressAt": ts(last),
		"stalled": !terminal && !last.IsZero() && s.now().Sub(last) > s.cfg.StallAfter,
	}
	if !terminal {
		out["completedAt"] = nil
	}
	return out
}

func (s *Server) renderJob(r *http.Request, handle string, h Handle, j domain.Job, expand bool) map[string]any {
	status := j.Status()
	out := s.timing(j.CreatedAt, j.StartedAt, j.CompletedAt, j.LastProgressAt, h, status.Terminal())
	out["jobId"], out["type"], out["status"], out["progress"] = handle, j.Kind, status, j.Progress()
	if d, ok := j.Duration(); ok {
		out["duration"] = d.Seconds()
	}
	rows := make([]rowJSON, len(j.Rows))
	for i, row := range j.Rows {
		rows[i] = rowJSON{DocumentID: row.DocumentID, Status: row.Status}
		if j.Kind == domain.JobPreprocess {
			rows[i].Error = row.Error
		}
		if expand {
			if d, err := s.views.Document(orgOf(r), row.DocumentID); err == nil {
				name, pages := d.FileName, d.Pages
				rows[i].FileName, rows[i].NumPages, rows[i].Reference = &name, &pages, optional(d.Reference)
			}
		}
	}
	result := map[string]any{"documents": rows}
	if j.Kind == domain.JobExtraction && status.Terminal() && status != domain.JobStatusCancelled {
		result["results"] = map[string]any{"sessionId": s.cfg.Handles.Sign(orgOf(r), Handle{Kind: HandleKindSession, Subject: j.SessionID, Expires: h.Expires})}
	}
	out["result"] = result
	if s.views != nil && s.asOf.IsZero() { // delivery state is not replayed by time travel
		if n, ok := s.views.LastNotification(orgOf(r), j.ID, false); ok {
			out["lastDelivery"] = renderDeliveries([]domain.Notification{n})[0]
		}
	}
	return out
}

// renderRun shows a single-document preprocess job: no progress, but the
// document's file name and page count.
func (s *Server) renderRun(handle string, h Handle, d domain.Document, run domain.Run) map[string]any {
	terminal := run.Status.Terminal()
	last := run.CompletedAt
	if last.IsZero() {
		last = run.StartedAt
	}
	if last.IsZero() {
		last = run.CreatedAt
	}
	out := s.timing(run.CreatedAt, run.StartedAt, run.CompletedAt, last, h, terminal)
	out["jobId"], out["type"], out["status"] = handle, "document_preprocess", run.Status
	out["documentId"], out["fileName"] = d.ID, d.FileName
	out["numPages"] = nil
	if run.Status == domain.JobStatusCompleted {
		out["numPages"] = run.Pages
	}
	if run.Error != nil {
		out["error"] = run.Error
	}
	if terminal && !run.StartedAt.IsZero() {
		out["duration"] = run.CompletedAt.Sub(run.StartedAt).Seconds()
	}
	if s.views != nil && s.asOf.IsZero() {
		if n, ok := s.views.LastNotification(d.OrgID, domain.Notification{DocumentID: d.ID, Attempt: run.Attempt}.Subject(), false); ok {
			out["lastDelivery"] = renderDeliveries([]domain.Notification{n})[0]
		}
	}
	return out
}
