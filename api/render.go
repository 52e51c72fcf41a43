package api

import (
	"time"

	"github.com/docket/docket/domain"
)

// documentJSON is a document on the batch surface.
type documentJSON struct {
	ID              string                  `json:"id"`
	Batch           *string                 `json:"batch_name"`
	FileName        string                  `json:"file_name"`
	Reference       *string                 `json:"reference"`
	ContentType     string                  `json:"content_type"`
	Size            int64                   `json:"size"`
	Status          domain.Public           `json:"status"`
	NumPages        *int                    `json:"num_pages"`
	Currency        *string                 `json:"currency"`
	LineItems       []domain.LineItem       `json:"line_items"`
	ProcessingError *domain.ProcessingError `json:"processing_error"`
	CreatedAt       *time.Time              `json:"created_at"`
	StartedAt       *time.Time              `json:"started_at"`
	CompletedAt     *time.Time              `json:"completed_at"`
}

// batchJSON is a batch's status view.
type batchJSON struct {
	Name        string                `json:"name"`
	Status      domain.Public         `json:"status"`
	Total       int                   `json:"total"`
	Counts      map[domain.Public]int `json:"counts"`
	AllDone     bool                  `json:"all_done"`
	CreatedAt   *time.Time            `json:"created_at"`
	StartedAt   *time.Time            `json:"started_at"`
	CompletedAt *time.Time            `json:"completed_at"`
	// LastDelivery is the newest webhook notification of the batch, when it
	// has had one (GET /v1/batches/{batch_name} only).
	LastDelivery map[string]any `json:"last_delivery,omitempty"`
}

func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func renderDocument(d domain.Document) documentJSON {
	out := documentJSON{
		ID: d.ID, Batch: optional(d.BatchName), FileName: d.FileName, Reference: optional(d.Reference),
		ContentType: d.ContentType, Size: d.Size, Status: d.Status.BatchStatus(),
		Currency: optional(d.Currency), LineItems: []domain.LineItem{}, ProcessingError: d.Error,
		CreatedAt: ts(d.CreatedAt), StartedAt: ts(d.StartedAt), CompletedAt: ts(d.CompletedAt),
	}
	if d.Pages > 0 || d.Status == domain.StatusSucceeded {
		n := d.Pages
		out.NumPages = &n
	}
	if d.LineItems != nil {
		out.LineItems = d.LineItems
	}
	// The batch surface shows started_at only once a worker holds the
	// document and completed_at only for its terminal states.
	if out.Status == domain.PublicQueued {
		out.StartedAt, out.CompletedAt = nil, nil
	}
	return out
}

func renderBatch(b domain.Batch) batchJSON {
	counts := make(map[domain.Public]int, len(domain.PublicStatuses))
	for _, p := range domain.PublicStatuses {
		counts[p] = b.Counts.Of(p)
	}
	created, started, completed := b.Timestamps()
	return batchJSON{
		Name: b.Name, Status: b.Status(), Total: b.Documents, Counts: counts, AllDone: b.AllDone(),
		CreatedAt: ts(created), StartedAt: ts(started), CompletedAt: ts(completed),
	}
}
