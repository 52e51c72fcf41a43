package domain

import (
	"fmt"
	"time"
)

// Delivery outcomes recorded by WebhookDeliveryAttempted.
const (
	DeliveryDelivered = "delivered" // 2xx
	DeliveryRetry     = "retry"     // failed; NextAttemptAt is set
	DeliveryExhausted = "exhausted" // failed, and that was the last attempt
	DeliveryGone      = "gone"      // 410: the subscription is disabled
	DeliveryRefused   = "refused"   // the URL is not allowed (SSRF rules)
)

// BatchWebhookSet registers or replaces a batch's webhook. Secret is the
// signing secret ("whsec_..."), which the delivering node needs; the log is
// the only place every node can get it from.
type BatchWebhookSet struct {
	Meta      Meta   `avro:"meta"`
	BatchName string `avro:"batch_name"`
	URL       string `avro:"url"`
	Secret    string `avro:"secret"`
}

// BatchWebhookRemoved removes a batch's webhook.
type BatchWebhookRemoved struct {
	Meta      Meta   `avro:"meta"`
	BatchName string `avro:"batch_name"`
}

// WebhookDeliveryAttempted records one delivery attempt of a notification,
// so the delivery log is auditable and survives the loss of any node.
type WebhookDeliveryAttempted struct {
	Meta           Meta       `avro:"meta"`
	NotificationID string     `avro:"notification_id"`
	Attempt        int        `avro:"attempt"`
	HTTPStatus     int        `avro:"http_status"`
	LatencyMillis  int64      `avro:"latency_ms"`
	Outcome        string     `avro:"outcome"`
	Error          string     `avro:"error"`
	NextAttemptAt  *time.Time `avro:"next_attempt_at"`
}

func (e *BatchWebhookSet) Type() string          { return "BatchWebhookSet" }
func (e *BatchWebhookRemoved) Type() string      { return "BatchWebhookRemoved" }
func (e *WebhookDeliveryAttempted) Type() string { return "WebhookDeliveryAttempted" }

func (e *BatchWebhookSet) Header() *Meta          { return &e.Meta }
func (e *BatchWebhookRemoved) Header() *Meta      { return &e.Meta }
func (e *WebhookDeliveryAttempted) Header() *Meta { return &e.Meta }

// Notification is one webhook message and its delivery state. It is created
// by a projection from a completion (its id derived from the log position of
// the event that completed the batch, so every node derives the same one)
// and moved by WebhookDeliveryAttempted.
type Notification struct {
	ID        string
	OrgID     string
	Partition int32
	Target    string // batch name, or endpoint id
	Endpoint  bool   // Target is a webhook endpoint (jobs surface)
	// Subject of a jobs-surface notification; its payload carries a signed
	// jobId, made by the delivering node from these.
	DocumentID  string `json:",omitempty"`
	Attempt     int    `json:",omitempty"`
	JobID       string `json:",omitempty"`
	SessionID   string `json:",omitempty"`
	URL         string
	Secret      string
	EventType   string
	Payload     []byte
	CreatedAt   time.Time
	Attempts    int
	State       string // pending, delivered, exhausted, gone, refused
	NextAt      time.Time
	LastStatus  int
	LastOutcome string
	LastError   string
	LastAt      time.Time
}

// Subject names what a jobs-surface notification is about: the job, or the
// document's preprocess run ("<document>/<attempt>").
func (n Notification) Subject() string {
	if n.DocumentID != "" {
		return fmt.Sprintf("%s/%d", n.DocumentID, n.Attempt)
	}
	return n.JobID
}

// Pending reports whether the notification still waits for delivery.
func (n Notification) Pending() bool { return n.State == "pending" }

// Apply folds one delivery attempt.
func (n Notification) Apply(e *WebhookDeliveryAttempted) (Notification, error) {
	if n.ID == "" || !n.Pending() || e.Attempt != n.Attempts+1 {
		return n, ErrStaleDelivery
	}
	n.Attempts, n.LastStatus, n.LastOutcome, n.LastError, n.LastAt = e.Attempt, e.HTTPStatus, e.Outcome, e.Error, e.Meta.OccurredAt
	switch e.Outcome {
	case DeliveryRetry:
		if e.NextAttemptAt == nil {
			return n, ErrStaleDelivery
		}
		n.NextAt = *e.NextAttemptAt
	case DeliveryDelivered, DeliveryExhausted, DeliveryGone, DeliveryRefused:
		n.State = e.Outcome
		n.NextAt = time.Time{}
	default:
		return n, ErrStaleDelivery
	}
	return n, nil
}

// Event types an endpoint can subscribe to (spec/jobs.md).
const (
	EventDocumentProcessed        = "document.processed"
	EventDocumentProcessingFailed = "document.processing_failed"
	EventExtractionCompleted      = "extraction.completed"
	EventExtractionFailed         = "extraction.failed"
)

// EndpointEvents lists the subscribable event types.
var EndpointEvents = []string{EventDocumentProcessed, EventDocumentProcessingFailed, EventExtractionCompleted, EventExtractionFailed}

// WebhookEndpointCreated subscribes a URL to job-surface events.
type WebhookEndpointCreated struct {
	Meta       Meta     `avro:"meta"`
	EndpointID string   `avro:"endpoint_id"`
	URL        string   `avro:"url"`
	Events     []string `avro:"events"`
	Secret     string   `avro:"secret"`
}

// WebhookEndpointDeleted removes a subscription.
type WebhookEndpointDeleted struct {
	Meta       Meta   `avro:"meta"`
	EndpointID string `avro:"endpoint_id"`
}

func (e *WebhookEndpointCreated) Type() string  { return "WebhookEndpointCreated" }
func (e *WebhookEndpointDeleted) Type() string  { return "WebhookEndpointDeleted" }
func (e *WebhookEndpointCreated) Header() *Meta { return &e.Meta }
func (e *WebhookEndpointDeleted) Header() *Meta { return &e.Meta }

// Endpoint is a webhook subscription of the jobs surface.
type Endpoint struct {
	ID        string
	OrgID     string
	URL       string
	Events    []string
	Secret    string
	Disabled  bool // the receiver answered 410 Gone
	CreatedAt time.Time
}

// WebhookRedeliveryRequested asks for a finished notification (delivered,
// exhausted, gone or refused) to be sent again, with the same webhook-id.
type WebhookRedeliveryRequested struct {
	Meta           Meta   `avro:"meta"`
	NotificationID string `avro:"notification_id"`
}

func (e *WebhookRedeliveryRequested) Type() string  { return "WebhookRedeliveryRequested" }
func (e *WebhookRedeliveryRequested) Header() *Meta { return &e.Meta }

// Redeliver folds a redelivery request: the notification is pending again,
// due at once; attempt numbers go on from where they were.
func (n Notification) Redeliver(e *WebhookRedeliveryRequested) (Notification, error) {
	if n.ID == "" || n.Pending() {
		return n, ErrStaleDelivery
	}
	n.State, n.NextAt = "pending", e.Meta.OccurredAt
	return n, nil
}
