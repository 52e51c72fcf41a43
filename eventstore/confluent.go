package eventstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/docket/docket/schemas"
)

// The Confluent wire format, for shops whose consumers resolve schemas
// through a schema registry: a zero magic byte, the schema's registry id as
// a 4-byte big-endian number, then the same Avro binary body as the
// single-object encoding. The first byte tells the two apart (00 vs C3).
const (
	confluentMagic     = 0x00
	confluentHeaderLen = 5
)

// registry is what a codec knows of a schema registry. It is filled once,
// when the codec is built, and read-only afterwards: Decode never calls the
// registry, so a registry outage cannot turn into records the projections
// skip as undecodable.
type registry struct {
	ids  map[string]uint32      // event type → id of its current schema
	byID map[uint32]*codecEntry // every id registered for a schema this codec knows
}

// Subject is the registry subject of an event type's schemas on topic:
// "<topic>-docket.events.<Type>" (Confluent's TopicRecordNameStrategy),
// since one topic carries many record types.
func Subject(topic, eventType string) string {
	return topic + "-" + schemas.Namespace + "." + eventType
}

// WithRegistry returns a copy of c that writes the Confluent wire format
// and reads it as well as the single-object encoding. It registers every
// current event schema under Subject(topic, type) (registering a schema the
// subject already has returns its id) and learns the ids of every version
// registered under those subjects whose schema it knows, so that events
// written by earlier releases decode too.
func (c *Codec) WithRegistry(ctx context.Context, cl *sr.Client, topic string) (*Codec, error) {
	reg := &registry{ids: map[string]uint32{}, byID: map[uint32]*codecEntry{}}
	for name, entry := range c.byType {
		text, err := schemas.Standalone(name)
		if err != nil {
			return nil, err
		}
		subject := Subject(topic, name)
		created, err := register(ctx, cl, subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
		if err != nil {
			return nil, fmt.Errorf("%w: register %s: %w", registryError(err), subject, err)
		}
		reg.ids[name] = uint32(created.ID)
		reg.byID[uint32(created.ID)] = entry
		var versions []sr.SubjectSchema
		err = registryCall(ctx, func() (err error) {
			versions, err = cl.Schemas(ctx, subject)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %w", registryError(err), subject, err)
		}
		for _, v := range versions {
			if known := c.knownSchema(v.Schema.Schema); known != nil {
				reg.byID[uint32(v.ID)] = known
			}
		}
	}
	out := *c
	out.reg = reg
	return &out, nil
}

// registryError is the sentinel a failed registry call is wrapped with:
// ErrUnavailable when asking later may succeed, else ErrRegistryRefused.
func registryError(err error) error {
	if registryUnavailable(err) {
		return fmt.Errorf("%w: schema registry", ErrUnavailable)
	}
	return ErrRegistryRefused
}

// registryAttempts bounds how often one registry call is made: an
// incompatible schema (409) must still fail, after about 1.5 s of backoff.
const registryAttempts = 6

// register registers schema under subject and returns its id. Registering
// a schema the subject has is idempotent in Confluent's API, so a call
// that failed or timed out can be made again. Nodes that start together
// register at once and can collide: Apicurio then refuses one with 409
// ("already exists") or, on its in-memory storage, with a 500 from its
// database, and its database's row locks can hold an answer past the
// client's 5 s timeout (CI saw both).
func register(ctx context.Context, cl *sr.Client, subject string, schema sr.Schema) (sr.SubjectSchema, error) {
	var created sr.SubjectSchema
	err := registryCall(ctx, func() (err error) {
		created, err = cl.CreateSchema(ctx, subject, schema)
		return err
	})
	return created, err
}

// registryCall runs fn until it succeeds, fails in a way asking again
// cannot mend, or has been tried registryAttempts times. A conflict (409)
// is asked again because a collision answers with it; an incompatible
// schema does too, hence the bound.
func registryCall(ctx context.Context, fn func() error) error {
	attempts := 0
	return retry(ctx, func(err error) bool {
		attempts++
		var re *sr.ResponseError
		conflict := errors.As(err, &re) && re.StatusCode == http.StatusConflict
		return attempts < registryAttempts && ctx.Err() == nil && (conflict || registryUnavailable(err))
	}, fn)
}

// registryUnavailable reports whether a registry call failed for want of
// a working registry rather than because of what it asked: a server error
// (5xx) or no answer at all (timeout, refused connection).
func registryUnavailable(err error) bool {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= http.StatusInternalServerError
	}
	var ue *url.Error
	return errors.As(err, &ue)
}

// knownSchema returns the entry whose schema has the same fingerprint as
// the registry's text, or nil.
func (c *Codec) knownSchema(text string) *codecEntry {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil
	}
	fp, err := schemas.Fingerprint(s)
	if err != nil {
		return nil
	}
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], fp)
	return c.byFingerprint[key]
}

// SchemaID is the registry id the codec writes for eventType, if it has a
// registry.
func (c *Codec) SchemaID(eventType string) (int, bool) {
	if c.reg == nil {
		return 0, false
	}
	id, ok := c.reg.ids[eventType]
	return int(id), ok
}

func (r *registry) frame(eventType string, body []byte) []byte {
	out := make([]byte, confluentHeaderLen, confluentHeaderLen+len(body))
	out[0] = confluentMagic
	binary.BigEndian.PutUint32(out[1:], r.ids[eventType])
	return append(out, body...)
}

// entry parses the Confluent header of b.
func (r *registry) entry(b []byte) (*codecEntry, []byte, error) {
	if len(b) < confluentHeaderLen {
		return nil, nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte Confluent header", ErrBadEncoding, len(b), confluentHeaderLen)
	}
	id := binary.BigEndian.Uint32(b[1:confluentHeaderLen])
	e, ok := r.byID[id]
	if !ok {
		return nil, nil, fmt.Errorf("%w: registry schema id %d is not one of docket's schemas known at start", ErrUnknownFingerprint, id)
	}
	return e, b[confluentHeaderLen:], nil
}
