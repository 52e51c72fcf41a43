package eventstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/schemas"
)

// registryEnv names a running schema registry that speaks the Confluent
// API (scripts/registry.sh starts one). The test needs a real one.
const registryEnv = "DOCKET_TEST_SCHEMA_REGISTRY"

func registryURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv(registryEnv)
	if url == "" {
		t.Skipf("%s is not set: no schema registry to test the Confluent wire format against (scripts/registry.sh)", registryEnv)
	}
	return url
}

// TestConfluentWireFormat appends every event type through a store that
// uses a real schema registry, checks the bytes on the topic (00, the id the
// registry gave the schema, the Avro body), that the registry holds the
// same schema, and that a reader with the registry decodes a topic mixing
// both encodings, while a reader without one refuses the Confluent records.
func TestConfluentWireFormat(t *testing.T) {
	t.Parallel()
	url := registryURL(t)
	plain, seeds := setup(t)
	withReg := openStore(t, seeds, eventstore.Prefix(prefixOf(plain)), eventstore.SchemaRegistry(url))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	org := "org-confluent"
	var want []domain.Event
	for i, zero := range domain.Catalogue() {
		ev := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(domain.Event)
		*ev.Header() = eventstore.NewMeta(org, "tester", "c-"+ev.Type())
		store := withReg
		if i%3 == 0 {
			store = plain // every third event in the single-object encoding
		}
		if _, err := store.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}

	raw := readRaw(t, seeds, plain.EventsTopic(), plain.PartitionFor(org), len(want))
	rc, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range raw {
		typ := want[i].Type()
		if i%3 == 0 {
			if r.Value[0] != 0xC3 || r.Value[1] != 0x01 {
				t.Fatalf("%s: single-object record starts % X", typ, r.Value[:2])
			}
			continue
		}
		id, ok := withReg.Codec().SchemaID(typ)
		if !ok || r.Value[0] != 0 || binary.BigEndian.Uint32(r.Value[1:5]) != uint32(id) {
			t.Fatalf("%s: record starts % X, want 00 and schema id %d", typ, r.Value[:5], id)
		}
		// The registry holds, under that id, the schema the body was
		// written with.
		s, err := rc.SchemaByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := avro.ParseWithCache(s.Schema, "", &avro.SchemaCache{})
		if err != nil {
			t.Fatalf("%s: registry schema %d: %v", typ, id, err)
		}
		got, _ := schemas.Fingerprint(parsed)
		fp, _ := withReg.Codec().Fingerprint(typ)
		if got != binary.LittleEndian.Uint64(fp[:]) {
			t.Errorf("%s: the registry's schema %d is not the one docket writes", typ, id)
		}
		subject := eventstore.Subject(plain.EventsTopic(), typ)
		versions, err := rc.Schemas(ctx, subject)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		if last := versions[len(versions)-1]; last.ID != id {
			t.Errorf("%s: newest version has id %d, docket writes %d", subject, last.ID, id)
		}
	}

	// Both encodings decode through the registry-aware codec; the plain one
	// refuses the Confluent records with ErrBadEncoding.
	for i, r := range raw {
		ev, err := withReg.Codec().Decode(r.Value)
		if err != nil || !reflect.DeepEqual(ev, want[i]) {
			t.Fatalf("%d: decoded %+v, %v; want %+v", i, ev, err, want[i])
		}
		_, err = plain.Codec().Decode(r.Value)
		if i%3 != 0 && !errors.Is(err, eventstore.ErrBadEncoding) {
			t.Errorf("%d: codec without registry: %v, want ErrBadEncoding", i, err)
		}
	}

	// A second store on the same registry gets the same ids (registering
	// is idempotent) and so reads what the first wrote.
	again := openStore(t, seeds, eventstore.Prefix(prefixOf(plain)), eventstore.SchemaRegistry(url))
	for _, ev := range want {
		a, _ := again.Codec().SchemaID(ev.Type())
		b, _ := withReg.Codec().SchemaID(ev.Type())
		if a != b {
			t.Errorf("%s: schema id %d on reopen, %d before", ev.Type(), a, b)
		}
	}
}

// readRaw reads n records of one partition from offset 0 with a plain
// client, to see the bytes on the topic.
func readRaw(t *testing.T, seeds []string, topic string, p int32, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(out), n, err)
		}
		out = append(out, f.Records()...)
	}
	return out
}

// TestConfluentNeedsRegistry: a codec without a registry refuses
// Confluent-framed values with ErrBadEncoding (it cannot know the id) rather
// than misreading them.
func TestConfluentNeedsRegistry(t *testing.T) {
	t.Parallel()
	c := codecForTest(t)
	good, err := c.Encode(&domain.OrgCreated{Meta: eventstore.NewMeta("o", "a", ""), Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	framed := append([]byte{0, 0, 0, 0, 7}, good[10:]...)
	if _, err := c.Decode(framed); !errors.Is(err, eventstore.ErrBadEncoding) {
		t.Fatalf("Confluent-framed value without registry: %v, want ErrBadEncoding", err)
	}
	if _, ok := c.SchemaID("OrgCreated"); ok {
		t.Error("a codec without registry reports a schema id")
	}
}
