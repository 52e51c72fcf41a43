package worker

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/extract"
)

type config struct {
	concurrency int
	timeout     time.Duration
	maxPages    int
	name        string
	instance    string
	log         zerolog.Logger
	hold        <-chan struct{}
	afterClaim  func(ctx context.Context, item eventstore.WorkItem)
	received    func(item eventstore.WorkItem, dispatched time.Time)
	observe     func(phase, outcome string, took time.Duration)
	extractor   extract.Extractor
	extractOpts []extract.Option
}

// Option configures a Worker.
type Option func(*config)

// Concurrency is how many documents one worker processes at once. Default 4.
func Concurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// Timeout bounds one document's processing; past it the document fails with
// code "timeout". Default 2 minutes.
func Timeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// MaxPages fails documents with more pages with "too_many_pages". Default 500.
func MaxPages(n int) Option { return func(c *config) { c.maxPages = n } }

// Name identifies the worker in ProcessingStarted events. Default "worker".
func Name(n string) Option { return func(c *config) { c.name = n } }

// Instance is the static group member id, so a restarted node takes its
// partitions back at once. Default "": dynamic membership.
func Instance(id string) Option { return func(c *config) { c.instance = id } }

// Logger sets the logger. Default: discard.
func Logger(l zerolog.Logger) Option { return func(c *config) { c.log = l } }

// Hold makes the worker wait, before claiming each document, until ch is
// closed. Tests use it to keep documents queued. Default nil: no hold.
func Hold(ch <-chan struct{}) Option { return func(c *config) { c.hold = ch } }

// AfterClaim calls fn after a claim is in the log and before the document is
// processed. Tests use it to hold a claimed document, as if its worker had
// hung or died. Default nil: no call.
func AfterClaim(fn func(ctx context.Context, item eventstore.WorkItem)) Option {
	return func(c *config) { c.afterClaim = fn }
}

// Received calls fn with every work item the worker takes off the work
// topic (stop requests aside), before it is claimed, and the time it was
// dispatched: its record's timestamp. `docket bench` times the dispatch hop
// with it instead of reading the work topic with a consumer of its own,
// which loaded the broker with fetches a deployment does not make.
// Default nil: no call.
func Received(fn func(item eventstore.WorkItem, dispatched time.Time)) Option {
	return func(c *config) { c.received = fn }
}

// Observe calls fn after every processing run with the work item's phase,
// the outcome (succeeded, failed or canceled) and how long the work took
// (metrics build the processing latency histogram from it). Default: none.
func Observe(fn func(phase, outcome string, took time.Duration)) Option {
	return func(c *config) { c.observe = fn }
}

// Extractor sets what finds the line items after preprocessing, for example
// an extract.Remote. Default extract.BuiltIn().
func Extractor(e extract.Extractor) Option { return func(c *config) { c.extractor = e } }

// ExtractOptions are passed to extract.Preprocess after the page limit
// (OCR languages, tool paths). Default none.
func ExtractOptions(opts ...extract.Option) Option {
	return func(c *config) { c.extractOpts = append(c.extractOpts, opts...) }
}
