package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/docket/docket/api"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// logFlags are the flags of every command that reads the log of a
// deployment: where the brokers are and which topics are its own. They have
// the same names, defaults and DOCKET_* variables as serve's.
type logFlags struct {
	dataDir, brokers, prefix, registry string
}

func (l *logFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&l.dataDir, "data-dir", env("data-dir", "./docket-data"), "data dir of a node with an embedded broker (reads broker.addr)")
	fs.StringVar(&l.brokers, "kafka-brokers", env("kafka-brokers", ""), "Kafka brokers host:port,... (default: the embedded broker in --data-dir)")
	fs.StringVar(&l.prefix, "topic-prefix", env("topic-prefix", "docket"), "topic prefix of the deployment (as given to serve)")
	fs.StringVar(&l.registry, "schema-registry-url", env("schema-registry-url", ""), "schema registry of a deployment that writes the Confluent wire format")
}

// open connects read-only: a mistyped prefix is an error, not a new topic.
func (l *logFlags) open(ctx context.Context) (*eventstore.Store, error) {
	seeds, err := seedsFrom(l.brokers, l.dataDir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return eventstore.Open(ctx, seeds, eventstore.Prefix(l.prefix), eventstore.ReadOnly(), eventstore.SchemaRegistry(l.registry))
}

// eventFilter selects events. Batch and job filters need state: most
// document events name only the document, so the filter learns which
// documents belong to the batch (DocumentUploaded) or the job (JobCreated,
// JobReopened) as it reads. An org's events share a partition and are read
// in order, so the event that names the link always comes first.
type eventFilter struct {
	org, document, batch, job string
	types                     map[string]bool
	since, until              time.Time
	docs                      map[string]bool // documents of the batch or job
}

func (f *eventFilter) match(ev domain.Event) bool {
	m := ev.Header()
	if f.org != "" && m.OrgID != f.org {
		return false
	}
	doc := domain.DocumentIDOf(ev)
	f.learn(ev)
	if len(f.types) > 0 && !f.types[ev.Type()] {
		return false
	}
	if !f.since.IsZero() && m.OccurredAt.Before(f.since) {
		return false
	}
	if !f.until.IsZero() && !m.OccurredAt.Before(f.until) {
		return false
	}
	if f.document != "" && doc != f.document && !slices.Contains(jobDocuments(ev), f.document) {
		return false
	}
	if f.batch != "" && !f.docs[doc] && batchOf(ev) != f.batch {
		return false
	}
	if f.job != "" && !f.docs[doc] && domain.JobIDOf(ev) != f.job {
		if q, ok := ev.(*domain.DocumentQueued); !ok || !slices.Contains(q.JobIDs, f.job) {
			return false
		}
	}
	return true
}

// learn records the documents that belong to the filtered batch or job.
func (f *eventFilter) learn(ev domain.Event) {
	switch {
	case f.batch != "" && batchOf(ev) == f.batch && domain.DocumentIDOf(ev) != "":
		f.docs[domain.DocumentIDOf(ev)] = true
	case f.job != "" && domain.JobIDOf(ev) == f.job:
		for _, d := range jobDocuments(ev) {
			f.docs[d] = true
		}
	}
}

// internalJobID turns a jobId as the API shows it (a signed handle) into
// the job id the log carries, using the deployment's handle keys and the
// org it was issued to (--org, else "default"). Anything that does not
// verify is taken as an internal id already.
func internalJobID(job, org, keys, dataDir string) string {
	if keys == "" {
		b, err := os.ReadFile(filepath.Join(dataDir, "handle-keys"))
		if err != nil {
			return job
		}
		keys = strings.TrimSpace(string(b))
	}
	parsed, err := api.ParseHandleKeys(keys)
	if err != nil {
		return job
	}
	signer, err := api.NewSigner(parsed)
	if err != nil {
		return job
	}
	if org == "" {
		org = domain.OrgID("default")
	}
	if h, err := signer.Verify(org, job); err == nil && h.Kind != api.HandleKindDocumentPreprocess {
		return h.Subject
	}
	return job
}

// batchOf is the batch an event names itself, or "".
func batchOf(ev domain.Event) string {
	switch e := ev.(type) {
	case *domain.DocumentUploaded:
		if e.BatchName != nil {
			return *e.BatchName
		}
	case *domain.BatchDeleted:
		return e.BatchName
	case *domain.BatchWebhookSet:
		return e.BatchName
	case *domain.BatchWebhookRemoved:
		return e.BatchName
	}
	return ""
}

func jobDocuments(ev domain.Event) []string {
	switch e := ev.(type) {
	case *domain.JobCreated:
		return e.DocumentIDs
	case *domain.JobReopened:
		return e.DocumentIDs
	}
	return nil
}

// eventLine is one line of `docket events`.
type eventLine struct {
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Timestamp time.Time      `json:"timestamp"`
	Type      string         `json:"type,omitempty"`
	Meta      *domain.Meta   `json:"meta,omitempty"`
	Payload   map[string]any `json:"payload,omitempty"`
	Error     string         `json:"error,omitempty"`
}

// payloadOf names an event's fields as its Avro schema does, so the JSON
// reads like the schema files (and like what other languages decode).
func payloadOf(ev domain.Event) map[string]any {
	v := reflect.ValueOf(ev).Elem()
	out := map[string]any{}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("avro"), ",")
		if name == "" || name == "meta" {
			continue
		}
		out[name] = v.Field(i).Interface()
	}
	return out
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	return t, nil
}

// events implements `docket events`: every event of the log (or those the
// filters select) as JSON lines, from offset 0 to the end of the log as it
// was at start, or on and on with --follow.
func events(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.bind(fs)
	f := eventFilter{docs: map[string]bool{}, types: map[string]bool{}}
	org := fs.String("org", "", "only this org (name or org_ id)")
	fs.StringVar(&f.document, "document", "", "only events of this document id")
	fs.StringVar(&f.batch, "batch", "", "only events of this batch name (with --org when several orgs use the name)")
	fs.StringVar(&f.job, "job", "", "only events of this job (a jobId from the API, or the log's job id): the job's own and its documents'")
	typ := fs.String("type", "", "only these event types, comma-separated (e.g. DocumentFailed,DocumentSucceeded)")
	since := fs.String("since", "", "only events that occurred at or after this RFC 3339 time")
	until := fs.String("until", "", "only events that occurred before this RFC 3339 time")
	follow := fs.Bool("follow", false, "keep reading new events until interrupted")
	handleKeys := fs.String("handle-keys", env("handle-keys", ""), "job handle keys, to accept an API jobId in --job (default: <data-dir>/handle-keys)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.since, err = parseTime(*since); err != nil {
		return usageError("--since: %v", err)
	}
	if f.until, err = parseTime(*until); err != nil {
		return usageError("--until: %v", err)
	}
	known := map[string]bool{}
	for _, ev := range domain.Catalogue() {
		known[ev.Type()] = true
	}
	for _, t := range strings.Split(*typ, ",") {
		if t = strings.TrimSpace(t); t != "" {
			if !known[t] {
				return usageError("--type: unknown event type %q", t)
			}
			f.types[t] = true
		}
	}
	if f.org = *org; f.org != "" && !strings.HasPrefix(f.org, "org_") {
		f.org = domain.OrgID(f.org)
	}
	if f.job != "" {
		f.job = internalJobID(f.job, f.org, *handleKeys, lf.dataDir)
	}
	store, stop, err := openLogOf(ctx, lf)
	if err != nil {
		return err
	}
	defer stop()
	enc := json.NewEncoder(stdout)
	return scanLog(ctx, store, f.org, *follow, stderr, func(rec eventstore.Record) error {
		line := eventLine{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UTC()}
		if rec.Err != nil {
			line.Error = rec.Err.Error()
			return enc.Encode(line)
		}
		if !f.match(rec.Event) {
			return nil
		}
		line.Type, line.Meta, line.Payload = rec.Event.Type(), rec.Event.Header(), payloadOf(rec.Event)
		err := enc.Encode(line)
		// Avro's doubles allow NaN and the infinities, JSON has neither:
		// such an event (another writer's; the fold refuses it) is listed
		// with its type and meta and an error instead of its payload, and
		// the audit reads on. The encoder writes nothing of a line it fails.
		var unsupported *json.UnsupportedValueError
		if errors.As(err, &unsupported) {
			line.Payload, line.Error = nil, "payload not representable in JSON: "+unsupported.Str
			err = enc.Encode(line)
		}
		return err
	})
}

// scanLog calls fn for every record of the event topic from its start
// (only the org's partition when org is set), in log order per partition,
// up to the end offsets at call time, or until ctx ends when follow is
// set. A partition whose first records were deleted (a retention the
// event topic should not have) is read from where it now starts, and
// warn says so: an audit should see what is left, and know what is not.
func scanLog(ctx context.Context, store *eventstore.Store, org string, follow bool, warn io.Writer, fn func(eventstore.Record) error) error {
	end, err := store.EndOffsets(ctx)
	if err != nil {
		return err
	}
	start, err := store.StartOffsets(ctx)
	if err != nil {
		return err
	}
	from := map[int32]int64{}
	for p := range store.Partitions() {
		if org == "" || store.PartitionFor(org) == p {
			from[p] = start[p]
			if start[p] > 0 {
				fmt.Fprintf(warn, "docket events: partition %d starts at offset %d: events 0 to %d were deleted from %s\n", p, start[p], start[p]-1, store.EventsTopic())
			}
		}
	}
	r, err := store.NewReader(from)
	if err != nil {
		return err
	}
	defer r.Close()
	next := maps.Clone(from)
	done := func() bool {
		for p := range from {
			if next[p] < end[p] {
				return false
			}
		}
		return true
	}
	for follow || !done() {
		recs, err := r.Poll(ctx, 0)
		if err != nil {
			if ctx.Err() != nil && follow {
				return nil // interrupted: the normal end of --follow
			}
			if errors.Is(err, eventstore.ErrUnavailable) {
				continue // the client retries; a broker restart is not fatal
			}
			return err
		}
		for _, rec := range recs {
			if !follow && rec.Offset >= end[rec.Partition] {
				continue
			}
			next[rec.Partition] = rec.Offset + 1
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
	return nil
}
