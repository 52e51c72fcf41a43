package api

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/schemas"
)

// TestEventPayloadFieldsAreTheSchemas checks, for every event type, that the
// history payload has exactly the Avro field names of its schema file,
// meta aside.
func TestEventPayloadFieldsAreTheSchemas(t *testing.T) {
	t.Parallel()
	for _, ev := range domain.Catalogue() {
		data, err := fs.ReadFile(schemas.FS, ev.Type()+".avsc")
		if err != nil {
			t.Fatal(err)
		}
		var file struct{ Fields []struct{ Name string } }
		if err := json.Unmarshal(data, &file); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, f := range file.Fields {
			if f.Name != "meta" {
				want = append(want, f.Name)
			}
		}
		var got []string
		for k := range eventPayload(ev) {
			got = append(got, k)
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: payload fields %v, schema fields %v", ev.Type(), got, want)
		}
	}
}

func TestEventPayloadValuesAndRedaction(t *testing.T) {
	t.Parallel()
	next := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	cases := []struct {
		ev   domain.Event
		want string
	}{
		{&domain.DocumentUploaded{DocumentID: "d1", FileName: "a.pdf", Size: 3},
			`{"batch_name":null,"blob_key":"","content_type":"","document_id":"d1","file_name":"a.pdf","reference":null,"size":3}`},
		{&domain.DocumentSucceeded{DocumentID: "d1", Currency: strp("EUR"), LineItems: []domain.LineItem{{Description: "x", Quantity: 2, UnitPrice: 1.5, Amount: 3}}},
			`{"claim_id":"","currency":"EUR","document_id":"d1","line_items":[{"amount":3,"description":"x","quantity":2,"unit_price":1.5}]}`},
		{&domain.DocumentQueued{DocumentID: "d1", Phase: "full", Attempt: 1},
			`{"attempt":1,"document_id":"d1","force":false,"job_ids":[],"phase":"full"}`},
		{&domain.BatchWebhookSet{BatchName: "b", URL: "https://example.com/h", Secret: "whsec_c2VjcmV0"},
			`{"batch_name":"b","secret":"[redacted]","url":"https://example.com/h"}`},
		{&domain.WebhookEndpointCreated{EndpointID: "e1", URL: "https://example.com/h", Events: []string{"document.processed"}, Secret: "whsec_c2VjcmV0"},
			`{"endpoint_id":"e1","events":["document.processed"],"secret":"[redacted]","url":"https://example.com/h"}`},
		{&domain.ApiKeyIssued{KeyID: "k1", KeyHash: "abc", Label: "ci"},
			`{"key_hash":"[redacted]","key_id":"k1","label":"ci"}`},
		{&domain.WebhookDeliveryAttempted{NotificationID: "n1", Attempt: 1, Outcome: "retry", NextAttemptAt: &next},
			`{"attempt":1,"error":"","http_status":0,"latency_ms":0,"next_attempt_at":"2026-03-01T12:00:00.0000005Z","notification_id":"n1","outcome":"retry"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(eventPayload(c.ev))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.ev.Type(), b, c.want)
		}
	}
}

func strp(s string) *string { return &s }

func TestAsOfParameter(t *testing.T) {
	t.Parallel()
	past := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	cases := []struct {
		query   string
		present bool
		invalid bool
	}{
		{"", false, false},
		{"as_of=" + url.QueryEscape(past.Format(time.RFC3339Nano)), true, false},
		{"as_of=" + url.QueryEscape(past.In(time.FixedZone("x", 3600)).Format(time.RFC3339)), true, false},
		{"as_of=", true, true},
		{"as_of=yesterday", true, true},
		{"as_of=2026-01-02", true, true},
		{"as_of=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)), true, true},
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodGet, "/v1/documents/d1?"+c.query, nil)
		got, present, err := asOf(r)
		if present != c.present || (err != nil) != c.invalid {
			t.Errorf("%q: present %v, err %v", c.query, present, err)
		}
		if status, _ := classify(err); err != nil && status != http.StatusBadRequest {
			t.Errorf("%q: status %d, want 400", c.query, status)
		}
		if c.present && !c.invalid && !got.Equal(past.Truncate(time.Second)) && !got.Equal(past) {
			t.Errorf("%q: parsed %v, want %v", c.query, got, past)
		}
	}
}

// TestSchemasEndpoint serves every schema file, public, with the
// fingerprints the codec writes on the wire.
func TestSchemasEndpoint(t *testing.T) {
	t.Parallel()
	s, err := New(Config{}, nil, nil, nil, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	get := func(path string, out any) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if out != nil && rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return rec.Code
	}
	var list struct{ Schemas []schemaJSON }
	if code := get("/v1/schemas", &list); code != http.StatusOK {
		t.Fatalf("GET /v1/schemas without a key: %d", code)
	}
	files, _ := fs.Glob(schemas.FS, "*.avsc")
	if len(list.Schemas) != len(files) {
		t.Fatalf("%d schemas served, %d files", len(list.Schemas), len(files))
	}
	codec, err := eventstore.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, sc := range list.Schemas {
		data, _ := fs.ReadFile(schemas.FS, sc.Name+".avsc")
		var a, b any
		_ = json.Unmarshal(data, &a)
		_ = json.Unmarshal(sc.Schema, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: served schema differs from the file", sc.Name)
		}
		if sc.Versions != nil {
			t.Errorf("%s: the list carries versions", sc.Name)
		}
		wire, ok := codec.Fingerprint(sc.Name)
		if ok != sc.Event {
			t.Errorf("%s: event = %v, codec knows it = %v", sc.Name, sc.Event, ok)
		}
		if ok {
			events++
			if want := fmt.Sprintf("%016x", binary.LittleEndian.Uint64(wire[:])); sc.Fingerprint != want {
				t.Errorf("%s: fingerprint %s, the codec writes %s", sc.Name, sc.Fingerprint, want)
			}
		}
	}
	if events != len(domain.Catalogue()) {
		t.Errorf("%d event schemas, catalogue has %d", events, len(domain.Catalogue()))
	}

	var one schemaJSON
	if code := get("/v1/schemas/DocumentCanceled", &one); code != http.StatusOK {
		t.Fatalf("GET /v1/schemas/DocumentCanceled: %d", code)
	}
	versions, _ := fs.Glob(schemas.FS, "history/DocumentCanceled.v*.avsc")
	if len(one.Versions) != len(versions) || len(versions) < 2 {
		t.Fatalf("DocumentCanceled: %d versions served, %d files", len(one.Versions), len(versions))
	}
	for i, v := range one.Versions {
		if v.Version != i+1 || len(v.Fingerprint) != 16 {
			t.Errorf("version %d: %+v", i+1, v)
		}
	}
	// The newest frozen version is the current schema, with its fingerprint.
	if last := one.Versions[len(one.Versions)-1]; last.Fingerprint != one.Fingerprint {
		t.Errorf("newest version fingerprint %s, current %s", last.Fingerprint, one.Fingerprint)
	}
	if one.Versions[0].Fingerprint == one.Fingerprint {
		t.Errorf("v1 and current DocumentCanceled share a fingerprint")
	}
	if code := get("/v1/schemas/NoSuchEvent", nil); code != http.StatusNotFound {
		t.Errorf("unknown schema: %d, want 404", code)
	}
	if code := get("/v1/schemas/"+strings.Repeat("x", 300), nil); code != http.StatusNotFound {
		t.Errorf("long name: %d, want 404", code)
	}
}

// TestOpenAPIHistorySchemasMatchRender checks the documented shapes of
// history pages and schemas against what history.go and schemas.go emit.
func TestOpenAPIHistorySchemasMatchRender(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	ev := historyEventJSON{Payload: eventPayload(&domain.DocumentQueued{})}
	checkShape(t, schemaOf(t, doc, "HistoryEvent"), ev, "HistoryEvent", true)
	checkShape(t, schemaOf(t, doc, "HistoryPage"), map[string]any{"events": []historyEventJSON{ev}, "next_cursor": nil}, "HistoryPage", true)
	all, err := schemaCatalogue()
	if err != nil {
		t.Fatal(err)
	}
	one := all[0]
	checkShape(t, schemaOf(t, doc, "EventSchema"), one, "EventSchema", false)
	checkShape(t, schemaOf(t, doc, "EventSchemaVersion"), one.Versions[0], "EventSchemaVersion", true)
	checkShape(t, schemaOf(t, doc, "EventSchemaList"), map[string]any{"schemas": all}, "EventSchemaList", true)
}
