package domain

import "time"

// Meta is carried by every event. Time enters the domain only here.
type Meta struct {
	EventID       string    `avro:"event_id" json:"event_id"`
	OrgID         string    `avro:"org_id" json:"org_id"`
	OccurredAt    time.Time `avro:"occurred_at" json:"occurred_at"`
	Actor         string    `avro:"actor" json:"actor"`
	CorrelationID string    `avro:"correlation_id" json:"correlation_id"`
}

// Event is implemented by every event type of the catalogue.
type Event interface {
	// Type is the event's name in the catalogue and its Avro record name.
	Type() string
	// Header gives access to the shared meta record.
	Header() *Meta
}

// Processing phases. A work item names its target: PhaseFull runs
// preprocessing and then extraction under one claim.
const (
	PhasePreprocess = "preprocess"
	PhaseExtract    = "extract"
	PhaseFull       = "full"
)

// LineItem is one row of an invoice's item table.
type LineItem struct {
	Description string  `avro:"description" json:"description"`
	Quantity    float64 `avro:"quantity" json:"quantity"`
	UnitPrice   float64 `avro:"unit_price" json:"unit_price"`
	Amount      float64 `avro:"amount" json:"amount"`
}

// OrgCreated starts an organisation. Org ids are derived from names, so a
// second OrgCreated for the same name is a no-op.
type OrgCreated struct {
	Meta Meta   `avro:"meta"`
	Name string `avro:"name"`
}

// ApiKeyIssued records a new API key. Only a SHA-256 of the secret is kept.
type ApiKeyIssued struct {
	Meta    Meta   `avro:"meta"`
	KeyID   string `avro:"key_id"`
	KeyHash string `avro:"key_hash"`
	Label   string `avro:"label"`
}

// ApiKeyRevoked disables a key on every node that folds it.
type ApiKeyRevoked struct {
	Meta  Meta   `avro:"meta"`
	KeyID string `avro:"key_id"`
}

// DocumentUploaded records an accepted document whose bytes are already
// stored under BlobKey.
type DocumentUploaded struct {
	Meta        Meta    `avro:"meta"`
	DocumentID  string  `avro:"document_id"`
	BatchName   *string `avro:"batch_name"`
	FileName    string  `avro:"file_name"`
	ContentType string  `avro:"content_type"`
	Size        int64   `avro:"size"`
	BlobKey     string  `avro:"blob_key"`
	Reference   *string `avro:"reference"`
}

// DocumentQueued asks for a processing run. Attempt must be exactly one more
// than the document's current attempt, so two racing requests queue once.
// With the current attempt, while that run is queued or running and already
// performs the phase, it adds JobIDs to the run instead (a job joins it).
type DocumentQueued struct {
	Meta       Meta     `avro:"meta"`
	DocumentID string   `avro:"document_id"`
	Phase      string   `avro:"phase"`
	Attempt    int      `avro:"attempt"`
	JobIDs     []string `avro:"job_ids"`
	Force      bool     `avro:"force"`
}

// ProcessingStarted is a worker's claim on one attempt. ClaimID is unique to
// the run; results are accepted only from the current claim.
type ProcessingStarted struct {
	Meta       Meta   `avro:"meta"`
	DocumentID string `avro:"document_id"`
	Phase      string `avro:"phase"`
	Attempt    int    `avro:"attempt"`
	ClaimID    string `avro:"claim_id"`
	Worker     string `avro:"worker"`
}

// DocumentPreprocessed reports the preprocess phase: real type, pages, text.
type DocumentPreprocessed struct {
	Meta        Meta   `avro:"meta"`
	DocumentID  string `avro:"document_id"`
	ClaimID     string `avro:"claim_id"`
	ContentType string `avro:"content_type"`
	Pages       int    `avro:"pages"`
	TextChars   int    `avro:"text_chars"`
}

// DocumentSucceeded carries the extraction result.
type DocumentSucceeded struct {
	Meta       Meta       `avro:"meta"`
	DocumentID string     `avro:"document_id"`
	ClaimID    string     `avro:"claim_id"`
	Currency   *string    `avro:"currency"`
	LineItems  []LineItem `avro:"line_items"`
}

// DocumentFailed is a document-level outcome, not an API error.
type DocumentFailed struct {
	Meta       Meta   `avro:"meta"`
	DocumentID string `avro:"document_id"`
	ClaimID    string `avro:"claim_id"`
	Phase      string `avro:"phase"`
	Code       string `avro:"code"`
	Message    string `avro:"message"`
	Retryable  bool   `avro:"retryable"`
}

// DocumentCanceled ends a run: one that has not started (ClaimID empty), or
// a running one whose worker stopped it on request (ClaimID = its claim),
// keeping what it finished.
type DocumentCanceled struct {
	Meta       Meta   `avro:"meta"`
	DocumentID string `avro:"document_id"`
	Reason     string `avro:"reason"`
	ClaimID    string `avro:"claim_id"`
}

// BatchDeleted deletes a batch. Its documents that have not started are
// canceled by the fold; running ones finish.
type BatchDeleted struct {
	Meta      Meta   `avro:"meta"`
	BatchName string `avro:"batch_name"`
}

// IdempotencyKeyClaimed reserves an Idempotency-Key for one request. The
// first claim in log order wins.
type IdempotencyKeyClaimed struct {
	Meta        Meta   `avro:"meta"`
	Key         string `avro:"key"`
	RequestHash string `avro:"request_hash"`
	ClaimID     string `avro:"claim_id"`
}

// IdempotencyKeyCompleted stores the response to replay for a claimed key.
type IdempotencyKeyCompleted struct {
	Meta    Meta   `avro:"meta"`
	Key     string `avro:"key"`
	ClaimID string `avro:"claim_id"`
	Status  int    `avro:"status"`
	Body    []byte `avro:"body"`
}

// IdempotencyKeyReleased frees a claimed key after a failure that the client
// may retry (a 5xx), so that the retry runs again.
type IdempotencyKeyReleased struct {
	Meta    Meta   `avro:"meta"`
	Key     string `avro:"key"`
	ClaimID string `avro:"claim_id"`
}

// JobCreated starts a batch preprocess job or an extraction job over
// documents. The handler appends it before the DocumentQueued events that
// serve it, in the same produce call, so the job exists when they arrive.
type JobCreated struct {
	Meta        Meta     `avro:"meta"`
	JobID       string   `avro:"job_id"`
	Kind        string   `avro:"kind"`
	SessionID   *string  `avro:"session_id"`
	DocumentIDs []string `avro:"document_ids"`
	Force       bool     `avro:"force"`
}

// JobCancelRequested asks a job to stop: rows not started are canceled,
// running rows are told to stop and keep what they finished.
type JobCancelRequested struct {
	Meta  Meta   `avro:"meta"`
	JobID string `avro:"job_id"`
}

// JobReopened puts a terminal preprocess job back in progress because a
// document it covers is being preprocessed again (force). Generation is the
// job's new generation.
type JobReopened struct {
	Meta        Meta     `avro:"meta"`
	JobID       string   `avro:"job_id"`
	Generation  int      `avro:"generation"`
	DocumentIDs []string `avro:"document_ids"`
}

// JobCompleted records a job generation's outcome once every row is
// terminal. The coordinator duty appends it with a deterministic event id,
// so a duplicate after a duty hand-over is a no-op.
type JobCompleted struct {
	Meta       Meta   `avro:"meta"`
	JobID      string `avro:"job_id"`
	Generation int    `avro:"generation"`
	Status     string `avro:"status"`
	Done       int    `avro:"done"`
	Total      int    `avro:"total"`
	Failed     int    `avro:"failed"`
}

// JobCancelled records that a job whose cancellation was requested has no
// open row left.
type JobCancelled struct {
	Meta       Meta   `avro:"meta"`
	JobID      string `avro:"job_id"`
	Generation int    `avro:"generation"`
	Done       int    `avro:"done"`
	Total      int    `avro:"total"`
	Failed     int    `avro:"failed"`
}

func (e *OrgCreated) Type() string              { return "OrgCreated" }
func (e *ApiKeyIssued) Type() string            { return "ApiKeyIssued" }
func (e *ApiKeyRevoked) Type() string           { return "ApiKeyRevoked" }
func (e *DocumentUploaded) Type() string        { return "DocumentUploaded" }
func (e *DocumentQueued) Type() string          { return "DocumentQueued" }
func (e *ProcessingStarted) Type() string       { return "ProcessingStarted" }
func (e *DocumentPreprocessed) Type() string    { return "DocumentPreprocessed" }
func (e *DocumentSucceeded) Type() string       { return "DocumentSucceeded" }
func (e *DocumentFailed) Type() string          { return "DocumentFailed" }
func (e *DocumentCanceled) Type() string        { return "DocumentCanceled" }
func (e *BatchDeleted) Type() string            { return "BatchDeleted" }
func (e *IdempotencyKeyClaimed) Type() string   { return "IdempotencyKeyClaimed" }
func (e *IdempotencyKeyCompleted) Type() string { return "IdempotencyKeyCompleted" }
func (e *IdempotencyKeyReleased) Type() string  { return "IdempotencyKeyReleased" }
func (e *JobCreated) Type() string              { return "JobCreated" }
func (e *JobCancelRequested) Type() string      { return "JobCancelRequested" }
func (e *JobReopened) Type() string             { return "JobReopened" }
func (e *JobCompleted) Type() string            { return "JobCompleted" }
func (e *JobCancelled) Type() string            { return "JobCancelled" }

func (e *OrgCreated) Header() *Meta              { return &e.Meta }
func (e *ApiKeyIssued) Header() *Meta            { return &e.Meta }
func (e *ApiKeyRevoked) Header() *Meta           { return &e.Meta }
func (e *DocumentUploaded) Header() *Meta        { return &e.Meta }
func (e *DocumentQueued) Header() *Meta          { return &e.Meta }
func (e *ProcessingStarted) Header() *Meta       { return &e.Meta }
func (e *DocumentPreprocessed) Header() *Meta    { return &e.Meta }
func (e *DocumentSucceeded) Header() *Meta       { return &e.Meta }
func (e *DocumentFailed) Header() *Meta          { return &e.Meta }
func (e *DocumentCanceled) Header() *Meta        { return &e.Meta }
func (e *BatchDeleted) Header() *Meta            { return &e.Meta }
func (e *IdempotencyKeyClaimed) Header() *Meta   { return &e.Meta }
func (e *IdempotencyKeyCompleted) Header() *Meta { return &e.Meta }
func (e *IdempotencyKeyReleased) Header() *Meta  { return &e.Meta }
func (e *JobCreated) Header() *Meta              { return &e.Meta }
func (e *JobCancelRequested) Header() *Meta      { return &e.Meta }
func (e *JobReopened) Header() *Meta             { return &e.Meta }
func (e *JobCompleted) Header() *Meta            { return &e.Meta }
func (e *JobCancelled) Header() *Meta            { return &e.Meta }

// Catalogue returns a zero value of every event type, in catalogue order.
// The codec and the schema tests iterate it so that no type is forgotten.
func Catalogue() []Event {
	return []Event{
		&OrgCreated{}, &ApiKeyIssued{}, &ApiKeyRevoked{},
		&DocumentUploaded{}, &DocumentQueued{}, &ProcessingStarted{},
		&DocumentPreprocessed{}, &DocumentSucceeded{}, &DocumentFailed{},
		&DocumentCanceled{}, &BatchDeleted{},
		&IdempotencyKeyClaimed{}, &IdempotencyKeyCompleted{}, &IdempotencyKeyReleased{},
		&JobCreated{}, &JobCancelRequested{}, &JobReopened{}, &JobCompleted{}, &JobCancelled{},
		&BatchWebhookSet{}, &BatchWebhookRemoved{}, &WebhookDeliveryAttempted{},
		&WebhookEndpointCreated{}, &WebhookEndpointDeleted{}, &WebhookRedeliveryRequested{},
	}
}

// JobIDOf returns the job an event concerns, or "".
func JobIDOf(e Event) string {
	switch ev := e.(type) {
	case *JobCreated:
		return ev.JobID
	case *JobCancelRequested:
		return ev.JobID
	case *JobReopened:
		return ev.JobID
	case *JobCompleted:
		return ev.JobID
	case *JobCancelled:
		return ev.JobID
	}
	return ""
}

// DocumentIDOf returns the document an event concerns, or "".
func DocumentIDOf(e Event) string {
	switch ev := e.(type) {
	case *DocumentUploaded:
		return ev.DocumentID
	case *DocumentQueued:
		return ev.DocumentID
	case *ProcessingStarted:
		return ev.DocumentID
	case *DocumentPreprocessed:
		return ev.DocumentID
	case *DocumentSucceeded:
		return ev.DocumentID
	case *DocumentFailed:
		return ev.DocumentID
	case *DocumentCanceled:
		return ev.DocumentID
	}
	return ""
}
