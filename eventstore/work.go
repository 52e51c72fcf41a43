package eventstore

import (
	"encoding/json"
	"fmt"
)

// WorkItem is one record of the work topic. The work topic is internal (not
// part of the public event contract), so it is JSON; its id is the id of the
// DocumentQueued event it was dispatched from, which makes duplicates
// recognisable after a duty hand-over.
type WorkItem struct {
	ID          string `json:"id"`
	OrgID       string `json:"org_id"`
	DocumentID  string `json:"document_id"`
	Attempt     int    `json:"attempt"`
	Phase       string `json:"phase"`
	BlobKey     string `json:"blob_key"`
	FileName    string `json:"file_name"`
	ContentType string `json:"content_type"`
	// Cancel asks the worker holding the document to stop.
	Cancel bool `json:"cancel,omitempty"`
}

// Marshal encodes the item.
func (w WorkItem) Marshal() ([]byte, error) { return json.Marshal(w) }

// UnmarshalWork decodes an item.
func UnmarshalWork(b []byte) (WorkItem, error) {
	var w WorkItem
	if err := json.Unmarshal(b, &w); err != nil {
		return w, fmt.Errorf("%w: work item: %w", ErrBadEncoding, err)
	}
	if w.DocumentID == "" || w.OrgID == "" {
		return w, fmt.Errorf("%w: work item without document or org", ErrBadEncoding)
	}
	return w, nil
}
