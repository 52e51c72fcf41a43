package domain

// Status is the internal document state. It is never shown to clients
// directly: BatchStatus maps it to the batch surface's closed vocabulary.
type Status string

// Internal document states, in lifecycle order.
const (
	StatusUploaded      Status = "uploaded"
	StatusQueued        Status = "queued"
	StatusPreprocessing Status = "preprocessing"
	StatusPreprocessed  Status = "preprocessed"
	StatusExtracting    Status = "extracting"
	StatusSucceeded     Status = "succeeded"
	StatusFailed        Status = "failed"
	StatusCanceled      Status = "canceled"
)

// Running reports whether a worker holds the document.
func (s Status) Running() bool { return s == StatusPreprocessing || s == StatusExtracting }

// Terminal reports whether the document's last run ended. Preprocessed counts:
// a preprocess-only run is over, though the batch surface still shows it queued.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCanceled || s == StatusPreprocessed
}

// Public is a value of the batch surface's five-value vocabulary. New internal
// states must map onto these, never add to them.
type Public string

// The batch surface vocabulary of spec/batches.md.
const (
	PublicQueued     Public = "queued"
	PublicProcessing Public = "processing"
	PublicSucceeded  Public = "succeeded"
	PublicFailed     Public = "failed"
	PublicCanceled   Public = "canceled"
)

// PublicStatuses lists the vocabulary in lifecycle order.
var PublicStatuses = []Public{PublicQueued, PublicProcessing, PublicSucceeded, PublicFailed, PublicCanceled}

// index is p's position in PublicStatuses, or -1.
func (p Public) index() int {
	switch p {
	case PublicQueued:
		return 0
	case PublicProcessing:
		return 1
	case PublicSucceeded:
		return 2
	case PublicFailed:
		return 3
	case PublicCanceled:
		return 4
	}
	return -1
}

// BatchStatus maps an internal state onto the batch surface. A document that
// was only preprocessed (through the jobs surface) has not been extracted, so
// on this surface it is still waiting: queued.
func (s Status) BatchStatus() Public {
	switch s {
	case StatusPreprocessing, StatusExtracting:
		return PublicProcessing
	case StatusSucceeded:
		return PublicSucceeded
	case StatusFailed:
		return PublicFailed
	case StatusCanceled:
		return PublicCanceled
	default:
		return PublicQueued
	}
}

// Done reports whether the public value is terminal.
func (p Public) Done() bool {
	return p == PublicSucceeded || p == PublicFailed || p == PublicCanceled
}
