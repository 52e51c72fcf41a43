package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/extract"
	"github.com/docket/docket/projections"
	"github.com/docket/docket/webhook"
)

// routeTable is every route Handler registers, as "METHOD /path" with the
// OpenAPI path template. Handler returns the router wrapped in middleware,
// so its routes cannot be walked; TestOpenAPIRoutes instead checks this
// table against the live handler by probing every method on every path.
// A route on a new path must be added here by hand.
var routeTable = []string{
	"GET /healthz",
	"GET /readyz",
	"GET /openapi.json",
	"GET /metrics",
	"GET /console",
	"GET /console/{asset}",
	"GET /v1/batches",
	"GET /v1/batches/{batch_name}",
	"DELETE /v1/batches/{batch_name}",
	"POST /v1/batches/{batch_name}/documents",
	"POST /v1/batches/{batch_name}/process",
	"GET /v1/batches/{batch_name}/results",
	"GET /v1/batches/{batch_name}/events",
	"PUT /v1/batches/{batch_name}/webhook",
	"GET /v1/batches/{batch_name}/webhook",
	"DELETE /v1/batches/{batch_name}/webhook",
	"GET /v1/batches/{batch_name}/webhook/deliveries",
	"POST /v1/batches/{batch_name}/webhook/deliveries/{notification_id}/retry",
	"GET /v1/documents/{id}",
	"POST /v1/documents",
	"POST /v1/documents/process",
	"POST /v1/extraction-sessions",
	"GET /v1/extraction-sessions/{sessionId}/results",
	"GET /v1/jobs/{jobId}",
	"POST /v1/jobs/{jobId}/cancel",
	"GET /v1/jobs/{jobId}/events",
	"GET /v1/documents/{id}/history",
	"GET /v1/batches/{batch_name}/history",
	"GET /v1/jobs/{jobId}/history",
	"GET /v1/schemas",
	"GET /v1/schemas/{name}",
	"POST /v1/webhook-endpoints",
	"GET /v1/webhook-endpoints",
	"GET /v1/webhook-endpoints/{id}",
	"DELETE /v1/webhook-endpoints/{id}",
	"GET /v1/webhook-endpoints/{id}/deliveries",
	"POST /v1/webhook-endpoints/{id}/deliveries/{notification_id}/retry",
	"POST /v1/api-keys",
	"GET /v1/api-keys",
	"DELETE /v1/api-keys/{id}",
}

// routedBy reports whether the route table serves method on a concrete
// path, matching each {parameter} against one path segment as the router
// does: GET /v1/documents/process is GET /v1/documents/{id}.
func routedBy(method, path string) bool {
	for _, rt := range routeTable {
		m, tmpl, _ := strings.Cut(rt, " ")
		if m != method {
			continue
		}
		segs := strings.Split(tmpl, "/")
		for i, seg := range segs {
			if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
				segs[i] = "[^/]+"
			} else {
				segs[i] = regexp.QuoteMeta(seg)
			}
		}
		if regexp.MustCompile("^" + strings.Join(segs, "/") + "$").MatchString(path) {
			return true
		}
	}
	return false
}

var httpMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	return doc
}

// obj and arr index untyped JSON, failing the test on a wrong shape.
func obj(t *testing.T, v any, where string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: want an object, got %T", where, v)
	}
	return m
}

func strs(t *testing.T, v any, where string) []string {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: want an array, got %T", where, v)
	}
	out := make([]string, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("%s[%d]: want a string, got %T", where, i, e)
		}
		out[i] = s
	}
	return out
}

// resolve follows a local $ref chain ("#/a/b").
func resolve(doc map[string]any, v any) (any, error) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v, nil
		}
		target, err := pointer(doc, ref)
		if err != nil {
			return nil, err
		}
		v = target
	}
	return nil, errors.New("$ref chain too long")
}

func pointer(doc map[string]any, ref string) (any, error) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, errors.New("not a local reference: " + ref)
	}
	var cur any = doc
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, errors.New("unresolvable reference: " + ref)
		}
		if cur, ok = m[tok]; !ok {
			return nil, errors.New("unresolvable reference: " + ref)
		}
	}
	return cur, nil
}

// operations lists the documented "METHOD /path" pairs.
func operations(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	ops := map[string]map[string]any{}
	for path, item := range obj(t, doc["paths"], "paths") {
		for key, op := range obj(t, item, path) {
			switch key {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				ops[strings.ToUpper(key)+" "+path] = obj(t, op, key+" "+path)
			}
		}
	}
	return ops
}

func TestOpenAPIVersionAndInfo(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	info := obj(t, doc["info"], "info")
	if info["title"] != "docket" || info["version"] != "1.0.0" {
		t.Errorf("info title/version = %v/%v", info["title"], info["version"])
	}
	desc, _ := info["description"].(string)
	for _, want := range []string{
		"queued → processing → succeeded | failed | canceled", "created_at", "started_at", "completed_at",
		// The jobs surface: signed handles, the six job statuses, polling vs webhooks.
		"queued → in_progress → completed | completed_with_failures | failed | cancelled",
		"signed", "404", "GET /v1/jobs/{jobId}", "webhooks", "extraction.completed", "document.processed",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("info.description lacks %q", want)
		}
	}
	scheme := obj(t, obj(t, obj(t, doc["components"], "components")["securitySchemes"], "securitySchemes")["bearerAuth"], "bearerAuth")
	if scheme["type"] != "http" || scheme["scheme"] != "bearer" {
		t.Errorf("bearerAuth = %v", scheme)
	}
}

// TestOpenAPIRoutes checks that the documented operations are exactly the
// routes, and the route table against the live handler.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	documented := operations(t, doc)
	for _, rt := range routeTable {
		if _, ok := documented[rt]; !ok {
			t.Errorf("route %s is not documented", rt)
		}
	}
	for op := range documented {
		if !slices.Contains(routeTable, op) {
			t.Errorf("documented operation %s is not routed", op)
		}
	}

	s, err := New(Config{}, nil, nil, nil, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	concrete := strings.NewReplacer("{batch_name}", "march-2026", "{id}", "doc_06h3d3c0zfxwg3nfeh2sqq1am4",
		"{jobId}", "job_AQJrMXAAAAAAazeeSB5qb2JfMDZoM2RndzFlY3lqc2t5ZjhxbXp5dmtlZ21-A2gTRtPyNxAF-LkSx8gn",
		"{sessionId}", "ses_AQJrMXMAAAAAazeeUB5zZXNfMDZoM2RneDNnejZiY3Z2dDViYWs1MHBnYzgupSOV2xhuM7Ak_37rc_zW",
		"{notification_id}", "msg_07fac54f644ea41624686f4862", "{name}", "DocumentUploaded", "{asset}", "app.js")
	// routed reports whether the router found a handler: every /v1 route
	// answers 401 to an unauthenticated request before touching the (nil)
	// views, the others answer 200; the router itself answers 404 or 405.
	routed := func(method, path string) (bool, int) {
		req := httptest.NewRequest(method, path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Header().Get("X-Request-Id") == "" {
			t.Errorf("%s %s: no X-Request-Id", method, path)
		}
		return rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed, rec.Code
	}
	if ok, code := routed(http.MethodGet, "/v1/no-such-resource"); ok {
		t.Fatalf("probe cannot tell unrouted paths: GET /v1/no-such-resource = %d", code)
	}
	paths := map[string]bool{}
	for _, rt := range routeTable {
		paths[strings.SplitN(rt, " ", 2)[1]] = true
	}
	for path := range paths {
		for _, m := range httpMethods {
			want := routedBy(m, concrete.Replace(path))
			got, code := routed(m, concrete.Replace(path))
			if got != want {
				t.Errorf("%s %s: routed = %v (status %d), route table says %v", m, path, got, code, want)
			}
			if !got && code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d, want 405 for a known path", m, path, code)
			}
			public := strings.HasPrefix(path, "/v1/schemas")
			if got && strings.HasPrefix(path, "/v1/") && !public && code != http.StatusUnauthorized {
				t.Errorf("%s %s without a key: status %d, want 401", m, path, code)
			}
		}
	}

	// The served description is the embedded file.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != string(OpenAPI()) {
		t.Errorf("GET /openapi.json = %d, body differs from the embedded file", rec.Code)
	}
}

func TestOpenAPIRefsResolve(t *testing.T) {
	doc := loadOpenAPI(t)
	n := 0
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				n++
				if _, err := pointer(doc, ref); err != nil {
					t.Errorf("%s: %v", where, err)
				}
			}
			for k, e := range v {
				walk(e, where+"/"+k)
			}
		case []any:
			for i, e := range v {
				walk(e, where+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")
	if n == 0 {
		t.Error("no $ref found")
	}
}

// TestOpenAPIOperations checks each operation's parameters, security and
// responses.
func TestOpenAPIOperations(t *testing.T) {
	doc := loadOpenAPI(t)
	rateLimited := map[string]bool{
		"GET /v1/batches/{batch_name}": true, "GET /v1/documents/{id}": true, "GET /v1/jobs/{jobId}": true,
		"GET /v1/batches/{batch_name}/events": true, "GET /v1/jobs/{jobId}/events": true,
	}
	for name, op := range operations(t, doc) {
		method, path, _ := strings.Cut(name, " ")
		// The event schemas are public contract, under /v1 like the API.
		public := path == "/v1/schemas" || path == "/v1/schemas/{name}"
		v1 := strings.HasPrefix(path, "/v1/") && !public

		// Parameters: path templates declared; Idempotency-Key on POSTs.
		params := map[string]map[string]any{}
		replays := false // Idempotency-Key is the replaying kind (not accepted-and-ignored)
		var all []any
		if p, ok := obj(t, obj(t, doc["paths"], "paths")[path], path)["parameters"].([]any); ok {
			all = append(all, p...)
		}
		if p, ok := op["parameters"].([]any); ok {
			all = append(all, p...)
		}
		for _, p := range all {
			if m, ok := p.(map[string]any); ok && m["$ref"] == "#/components/parameters/IdempotencyKey" {
				replays = true
			}
			r, err := resolve(doc, p)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			pm := obj(t, r, name+" parameter")
			params[pm["in"].(string)+":"+pm["name"].(string)] = pm
		}
		for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
			if _, ok := params["path:"+m[1]]; !ok {
				t.Errorf("%s: path parameter %s not declared", name, m[1])
			}
		}
		if _, ok := params["header:Idempotency-Key"]; ok != (method == http.MethodPost) {
			t.Errorf("%s: Idempotency-Key declared = %v", name, ok)
		}
		if _, ok := params["header:X-Request-Id"]; !ok {
			t.Errorf("%s: X-Request-Id request header not declared", name)
		}

		// Security: /v1 inherits bearerAuth, the rest are public.
		if sec, ok := op["security"].([]any); ok == v1 || (ok && len(sec) != 0) {
			t.Errorf("%s: security = %v", name, op["security"])
		}

		responses := obj(t, op["responses"], name+" responses")
		want := []string{"405", "500"}
		if v1 {
			want = append(want, "401")
		}
		if replays {
			if method != http.MethodPost {
				t.Errorf("%s: a replaying Idempotency-Key on a %s", name, method)
			}
			want = append(want, "400", "409", "422")
		}
		if _, ok := op["requestBody"]; ok {
			want = append(want, "400", "413", "415")
		}
		if rateLimited[name] {
			want = append(want, "429")
		}
		for _, code := range want {
			if _, ok := responses[code]; !ok {
				t.Errorf("%s: response %s not documented", name, code)
			}
		}
		for code, r := range responses {
			status, err := strconv.Atoi(code)
			if err != nil {
				t.Errorf("%s: response key %q is not a status", name, code)
				continue
			}
			rv, err := resolve(doc, r)
			if err != nil {
				t.Errorf("%s %s: %v", name, code, err)
				continue
			}
			resp := obj(t, rv, name+" "+code)
			headers, _ := resp["headers"].(map[string]any)
			if _, ok := headers["X-Request-Id"]; !ok {
				t.Errorf("%s %s: no X-Request-Id header", name, code)
			}
			if rateLimited[name] && status != http.StatusUnauthorized && status != http.StatusMethodNotAllowed {
				for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"} {
					if _, ok := headers[h]; !ok {
						t.Errorf("%s %s: no %s header", name, code, h)
					}
				}
			}
			if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable && path != "/readyz" {
				if _, ok := headers["Retry-After"]; !ok {
					t.Errorf("%s %s: no Retry-After header", name, code)
				}
			}
			if status == http.StatusNoContent {
				if _, ok := resp["content"]; ok || method != http.MethodDelete {
					t.Errorf("%s 204: want a DELETE without content", name)
				}
				continue
			}
			if status == http.StatusOK && strings.HasSuffix(path, "/events") {
				// A Server-Sent Events stream.
				media := obj(t, obj(t, resp["content"], name+" 200 content")["text/event-stream"], name+" 200 text/event-stream")
				// Per event, as OpenAPI 3.1 tools (Schemathesis) read it.
				ev := obj(t, media["schema"], name+" 200 schema")
				if props, _ := ev["properties"].(map[string]any); ev["type"] != "object" || props["event"] == nil || props["id"] == nil || props["data"] == nil {
					t.Errorf("%s 200: the stream's schema is not an event {event, id, data}", name)
				}
				if len(obj(t, resp["content"], name)) != 1 {
					t.Errorf("%s 200: content other than text/event-stream", name)
				}
				continue
			}
			if status == http.StatusOK && (path == "/metrics" || strings.HasPrefix(path, "/console")) {
				// Text for Prometheus and the console's files, not JSON.
				for media, v := range obj(t, resp["content"], name+" 200 content") {
					if media == "application/json" || obj(t, obj(t, v, name)["schema"], name)["type"] != "string" {
						t.Errorf("%s 200: %s is not a text body", name, media)
					}
				}
				continue
			}
			media := obj(t, obj(t, resp["content"], name+" "+code+" content")["application/json"], name+" "+code+" application/json")
			schema := obj(t, media["schema"], name+" "+code+" schema")
			if _, err := resolve(doc, schema); err != nil {
				t.Errorf("%s %s: %v", name, code, err)
			}
			if status >= 400 && path != "/readyz" && schema["$ref"] != "#/components/schemas/Error" {
				t.Errorf("%s %s: schema %v, want the Error envelope", name, code, schema)
			}
		}
	}
}

func schemaOf(t *testing.T, doc map[string]any, name string) map[string]any {
	t.Helper()
	return obj(t, obj(t, obj(t, doc["components"], "components")["schemas"], "schemas")[name], name)
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkShape compares the JSON keys of v with a strict object schema.
func checkShape(t *testing.T, schema map[string]any, v any, name string, allRequired bool) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if schema["additionalProperties"] != false {
		t.Errorf("%s: additionalProperties is not false", name)
	}
	props := keysOf(obj(t, schema["properties"], name+" properties"))
	// The last webhook delivery is shown only once one exists, which these
	// renders (without views) never have.
	props = slices.DeleteFunc(props, func(k string) bool {
		_, shown := got[k]
		return !shown && (k == "lastDelivery" || k == "last_delivery")
	})
	if !slices.Equal(keysOf(got), props) {
		t.Errorf("%s: rendered keys %v, schema properties %v", name, keysOf(got), props)
	}
	req := strs(t, schema["required"], name+" required")
	sort.Strings(req)
	if allRequired && !slices.Equal(req, props) {
		t.Errorf("%s: required %v, want every property %v", name, req, props)
	}
}

// TestOpenAPISchemasMatchRender checks the schemas against what render.go
// and errors.go emit, and the enums against their Go sources.
func TestOpenAPISchemasMatchRender(t *testing.T) {
	doc := loadOpenAPI(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d := domain.Document{
		ID: "doc_1", BatchName: "march-2026", FileName: "a.pdf", ContentType: "application/pdf", Size: 10,
		Reference: "PO-1", Status: domain.StatusFailed, Pages: 1, Currency: "USD",
		LineItems: []domain.LineItem{{Description: "x", Quantity: 1, UnitPrice: 2, Amount: 2}},
		Error:     &domain.ProcessingError{Code: extract.CodeTimeout, Message: "m", Phase: domain.PhaseExtract, Retryable: true},
		CreatedAt: at, StartedAt: at, CompletedAt: at,
	}
	checkShape(t, schemaOf(t, doc, "Document"), renderDocument(d), "Document", true)
	checkShape(t, schemaOf(t, doc, "Document"), renderDocument(domain.Document{ID: "doc_2"}), "Document (empty)", true)
	checkShape(t, schemaOf(t, doc, "LineItem"), d.LineItems[0], "LineItem", true)
	checkShape(t, schemaOf(t, doc, "ProcessingError"), d.Error, "ProcessingError", false)
	b := domain.NewBatch("org", "march-2026")
	b, _ = b.Track(domain.Document{}, d)
	rb := renderBatch(b)
	checkShape(t, schemaOf(t, doc, "Batch"), rb, "Batch", true)
	checkShape(t, schemaOf(t, doc, "BatchCounts"), rb.Counts, "BatchCounts", true)
	_, env := errorResponse(ErrNotFound, "req_1")
	checkShape(t, schemaOf(t, doc, "Error"), env, "Error", true)
	checkShape(t, obj(t, obj(t, schemaOf(t, doc, "Error")["properties"], "Error")["error"], "Error.error"), env.Error, "Error.error", true)

	// Status: exactly the five public values.
	status := strs(t, schemaOf(t, doc, "Status")["enum"], "Status enum")
	var public []string
	for _, p := range domain.PublicStatuses {
		public = append(public, string(p))
	}
	if !slices.Equal(status, public) {
		t.Errorf("Status enum = %v, want %v", status, public)
	}

	// ProcessingError codes: those of the extract package.
	pe := obj(t, obj(t, schemaOf(t, doc, "ProcessingError")["properties"], "ProcessingError")["code"], "ProcessingError.code")
	wantPE := []string{extract.CodeUnsupportedFormat, extract.CodeCorruptDocument, extract.CodeEmptyDocument,
		extract.CodeOCRUnavailable, extract.CodeTooManyPages, extract.CodeTimeout, extract.CodeInternal, extract.CodeResultTooLarge}
	if got := strs(t, pe["enum"], "ProcessingError.code enum"); !slices.Equal(got, wantPE) {
		t.Errorf("ProcessingError code enum = %v, want %v", got, wantPE)
	}

	// Error codes: every code classify can produce, each documented under
	// its status on at least one operation.
	classified := map[string]int{}
	for _, err := range []error{
		ErrUnauthorized, ErrNotFound, ErrTooLarge, blobstore.ErrEmpty, ErrInvalid, ErrUnsupportedMedia,
		ErrRateLimited, ErrIdempotencyMismatch, ErrIdempotencyInFlight, ErrMethodNotAllowed,
		domain.ErrAlreadyQueued, ErrUnavailable, errInternal,
	} {
		status, code := classify(err)
		classified[code] = status
	}
	ec := obj(t, obj(t, obj(t, schemaOf(t, doc, "Error")["properties"], "Error")["error"], "Error.error")["properties"], "Error.error properties")
	codes := strs(t, obj(t, ec["code"], "code")["enum"], "Error code enum")
	if got, want := slices.Sorted(slices.Values(codes)), slices.Sorted(func(yield func(string) bool) {
		for c := range classified {
			if !yield(c) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Errorf("Error code enum = %v, want %v", got, want)
	}
	statuses := map[string]bool{}
	for _, op := range operations(t, doc) {
		for code := range obj(t, op["responses"], "responses") {
			statuses[code] = true
		}
	}
	for code, status := range classified {
		if !statuses[strconv.Itoa(status)] {
			t.Errorf("status %d (%s) is not documented on any operation", status, code)
		}
	}

	// The batch name pattern agrees with domain.ValidateBatchName.
	pat := regexp.MustCompile(schemaOf(t, doc, "BatchName")["pattern"].(string))
	for _, name := range []string{"march-2026", "a", "_x", "-x", "A.b_c-9", ".hidden", "", "a/b", "a b", "é", strings.Repeat("a", 128), strings.Repeat("a", 129)} {
		if got, want := pat.MatchString(name), domain.ValidateBatchName(name) == nil; got != want {
			t.Errorf("batch name %q: pattern says %v, ValidateBatchName says %v", name, got, want)
		}
	}
}

// TestOpenAPIJobSchemasMatchRender checks the jobs-surface schemas against
// what render_job.go emits, the enums against the domain's vocabularies and
// the handle patterns against what the Signer produces.
func TestOpenAPIJobSchemasMatchRender(t *testing.T) {
	doc := loadOpenAPI(t)
	signer, err := NewSigner([]HandleKey{{ID: "k1", Secret: []byte(strings.Repeat("s", 32))}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Handles: signer}, nil, nil, nil, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/jobs/x", nil)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pe := &domain.ProcessingError{Code: extract.CodeCorruptDocument, Message: "m", Phase: domain.PhasePreprocess}
	h := Handle{Kind: HandleKindBatchPreprocess, Subject: "job_1", Expires: at.Add(time.Hour)}
	handle := signer.Sign("org", h)
	row := func(id string, st domain.RowStatus, e *domain.ProcessingError) domain.Row {
		return domain.Row{DocumentID: id, Status: st, Error: e, StartedAt: at, CompletedAt: at.Add(time.Second)}
	}

	// rendered turns a render result into untyped JSON.
	rendered := func(v any) map[string]any {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// checkJob checks a terminal render (every property present) and an
	// open one (exactly the required properties) against a job schema.
	checkJob := func(name string, done, open map[string]any) {
		t.Helper()
		schema := schemaOf(t, doc, name)
		checkShape(t, schema, done, name+" (terminal)", false)
		req := strs(t, schema["required"], name+" required")
		sort.Strings(req)
		if got := keysOf(open); !slices.Equal(got, req) {
			t.Errorf("%s (open): rendered keys %v, required %v", name, got, req)
		}
		typ := obj(t, obj(t, schema["properties"], name)["type"], name+".type")
		if typ["const"] != done["type"] {
			t.Errorf("%s: type const %v, rendered %v", name, typ["const"], done["type"])
		}
		if !strings.HasPrefix(done["jobId"].(string), "job_") {
			t.Errorf("%s: jobId %v", name, done["jobId"])
		}
	}

	// Batch preprocess job: rows carry error; no results.
	pj := domain.Job{ID: "job_1", Kind: domain.JobPreprocess, CreatedAt: at, StartedAt: at, LastProgressAt: at,
		Rows: []domain.Row{row("doc_1", domain.RowCompleted, nil), row("doc_2", domain.RowFailed, pe)}}
	pOpen := rendered(s.renderJob(r, handle, h, pj, false))
	pj.Final, pj.CompletedAt = domain.JobStatusCompletedWithFailures, at.Add(2*time.Second)
	pDone := rendered(s.renderJob(r, handle, h, pj, false))
	checkJob("PreprocessJob", pDone, pOpen)
	pres := obj(t, obj(t, schemaOf(t, doc, "PreprocessJob")["properties"], "PreprocessJob")["result"], "PreprocessJob.result")
	checkShape(t, pres, pDone["result"], "PreprocessJob.result", true)
	checkShape(t, schemaOf(t, doc, "JobProgress"), pDone["progress"], "JobProgress", true)
	name, pages := "a.pdf", 1
	checkShape(t, schemaOf(t, doc, "PreprocessJobRow"), rowJSON{DocumentID: "doc_2", Status: domain.RowFailed, Error: pe, FileName: &name, NumPages: &pages, Reference: optional("PO-1")}, "PreprocessJobRow", false)
	if rows := pDone["result"].(map[string]any)["documents"].([]any); len(rows) != 2 || keysOf(rows[1].(map[string]any))[1] != "error" {
		t.Errorf("PreprocessJob rows %v: want the failed row's error", rows)
	}

	// Extraction job: rows never carry error; results once terminal.
	xh := Handle{Kind: HandleKindExtraction, Subject: "job_2", Expires: at.Add(time.Hour)}
	xj := domain.Job{ID: "job_2", Kind: domain.JobExtraction, SessionID: "ses_1", CreatedAt: at, LastProgressAt: at,
		Rows: []domain.Row{{DocumentID: "doc_1", Status: domain.RowQueued}, row("doc_2", domain.RowFailed, pe)}}
	xOpen := rendered(s.renderJob(r, signer.Sign("org", xh), xh, xj, false))
	xj.Final, xj.StartedAt, xj.CompletedAt = domain.JobStatusFailed, at, at.Add(2*time.Second)
	xDone := rendered(s.renderJob(r, signer.Sign("org", xh), xh, xj, false))
	checkJob("ExtractionJob", xDone, xOpen)
	xres := obj(t, obj(t, schemaOf(t, doc, "ExtractionJob")["properties"], "ExtractionJob")["result"], "ExtractionJob.result")
	checkShape(t, xres, xDone["result"], "ExtractionJob.result", false)
	checkShape(t, obj(t, obj(t, xres["properties"], "result")["results"], "result.results"), xDone["result"].(map[string]any)["results"], "ExtractionJob.result.results", true)
	if _, ok := xOpen["result"].(map[string]any)["results"]; ok {
		t.Error("ExtractionJob (open): results before the job is terminal")
	}
	for _, row := range xDone["result"].(map[string]any)["documents"].([]any) {
		if _, ok := row.(map[string]any)["error"]; ok {
			t.Errorf("ExtractionJob row %v carries an error", row)
		}
	}
	checkShape(t, schemaOf(t, doc, "ExtractionJobRow"), rowJSON{DocumentID: "doc_1", Status: domain.RowCompleted, FileName: &name, NumPages: &pages, Reference: optional("PO-1")}, "ExtractionJobRow", false)

	// Single-document preprocess job.
	dh := Handle{Kind: HandleKindDocumentPreprocess, Subject: DocumentRunSubject("doc_1", 1), Expires: at.Add(time.Hour)}
	d := domain.Document{ID: "doc_1", FileName: "a.pdf"}
	dOpen := rendered(s.renderRun(signer.Sign("org", dh), dh, d, domain.Run{Attempt: 1, Status: domain.JobStatusQueued, CreatedAt: at}))
	dDone := rendered(s.renderRun(signer.Sign("org", dh), dh, d, domain.Run{Attempt: 1, Status: domain.JobStatusFailed, Error: pe, CreatedAt: at, StartedAt: at, CompletedAt: at.Add(time.Second)}))
	checkJob("DocumentPreprocessJob", dDone, dOpen)

	// Job is exactly the three shapes, told apart by type.
	job := schemaOf(t, doc, "Job")
	mapping := obj(t, obj(t, job["discriminator"], "Job.discriminator")["mapping"], "Job.discriminator.mapping")
	for typ, name := range map[string]string{domain.JobPreprocess: "PreprocessJob", domain.JobExtraction: "ExtractionJob", "document_preprocess": "DocumentPreprocessJob"} {
		if mapping[typ] != "#/components/schemas/"+name {
			t.Errorf("Job discriminator %s -> %v, want %s", typ, mapping[typ], name)
		}
	}
	if one, _ := job["oneOf"].([]any); len(one) != len(mapping) {
		t.Errorf("Job oneOf has %d entries, mapping %d", len(one), len(mapping))
	}

	// The vocabularies.
	if got, want := strs(t, schemaOf(t, doc, "JobStatus")["enum"], "JobStatus enum"), []string{
		string(domain.JobStatusQueued), string(domain.JobStatusInProgress), string(domain.JobStatusCompleted),
		string(domain.JobStatusCompletedWithFailures), string(domain.JobStatusFailed), string(domain.JobStatusCancelled),
	}; !slices.Equal(got, want) {
		t.Errorf("JobStatus enum = %v, want %v", got, want)
	}
	if got, want := strs(t, schemaOf(t, doc, "JobRowStatus")["enum"], "JobRowStatus enum"), []string{
		string(domain.RowQueued), string(domain.RowInProgress), string(domain.RowCompleted), string(domain.RowFailed), string(domain.RowCancelled),
	}; !slices.Equal(got, want) {
		t.Errorf("JobRowStatus enum = %v, want %v", got, want)
	}

	// Handle patterns and length limits match what Sign produces.
	for name, hd := range map[string]Handle{
		"JobHandle":     {Kind: HandleKindExtraction, Subject: strings.Repeat("x", handleMaxSubject), Expires: at},
		"SessionHandle": {Kind: HandleKindSession, Subject: strings.Repeat("x", handleMaxSubject), Expires: at},
	} {
		sc := schemaOf(t, doc, name)
		long, err := NewSigner([]HandleKey{{ID: strings.Repeat("k", handleMaxKeyIDLen), Secret: []byte(strings.Repeat("s", 32))}})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{long.Sign("org", hd), signer.Sign("org", Handle{Kind: hd.Kind})} {
			if !regexp.MustCompile(sc["pattern"].(string)).MatchString(v) {
				t.Errorf("%s pattern %v rejects %q", name, sc["pattern"], v)
			}
			if max, _ := sc["maxLength"].(float64); len(v) > int(max) {
				t.Errorf("%s maxLength %v < %d", name, max, len(v))
			}
		}
		if max, _ := sc["maxLength"].(float64); int(max) != handleMaxLen {
			t.Errorf("%s maxLength %v, want %d", name, max, handleMaxLen)
		}
	}
	if max, _ := obj(t, obj(t, schemaOf(t, doc, "ProcessDocumentsRequest")["properties"], "request")["documentIds"], "documentIds")["maxItems"].(float64); int(max) != maxJobDocuments {
		t.Errorf("documentIds maxItems %v, want %d", max, maxJobDocuments)
	}
}

// TestOpenAPIWebhooks checks the webhook schemas against what webhooks.go
// renders and the domain's vocabularies, the outgoing notifications
// (top-level webhooks) and the event streams' descriptions.
func TestOpenAPIWebhooks(t *testing.T) {
	doc := loadOpenAPI(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	// Delivery: every property rendered, finished (nulls) or pending.
	delivery := schemaOf(t, doc, "Delivery")
	for _, n := range []domain.Notification{
		{ID: "msg_1", EventType: "batch.completed", State: domain.DeliveryDelivered, Attempts: 1, LastStatus: 204, LastOutcome: domain.DeliveryDelivered, CreatedAt: at, LastAt: at},
		{ID: "msg_2", EventType: domain.EventDocumentProcessed, State: "pending", CreatedAt: at, NextAt: at},
	} {
		checkShape(t, delivery, renderDeliveries([]domain.Notification{n})[0], "Delivery", true)
	}
	if got, want := strs(t, schemaOf(t, doc, "DeliveryState")["enum"], "DeliveryState enum"), []string{
		"pending", domain.DeliveryDelivered, domain.DeliveryExhausted, domain.DeliveryGone, domain.DeliveryRefused,
	}; !slices.Equal(got, want) {
		t.Errorf("DeliveryState enum = %v, want %v", got, want)
	}
	outcomes := obj(t, obj(t, delivery["properties"], "Delivery")["last_outcome"], "Delivery.last_outcome")["enum"].([]any)
	for _, o := range []string{domain.DeliveryDelivered, domain.DeliveryRetry, domain.DeliveryExhausted, domain.DeliveryGone, domain.DeliveryRefused} {
		if !slices.Contains(outcomes, any(o)) {
			t.Errorf("Delivery.last_outcome enum lacks %q", o)
		}
	}

	// Endpoints.
	ep := domain.Endpoint{ID: "ep_1", URL: "https://example.com/h", Events: domain.EndpointEvents, CreatedAt: at}
	checkShape(t, schemaOf(t, doc, "WebhookEndpoint"), renderEndpoint(ep), "WebhookEndpoint", true)
	if got := strs(t, schemaOf(t, doc, "WebhookEventType")["enum"], "WebhookEventType enum"); !slices.Equal(got, domain.EndpointEvents) {
		t.Errorf("WebhookEventType enum = %v, want %v", got, domain.EndpointEvents)
	}
	for name, want := range map[string][]string{
		"BatchWebhookCreated":    {"batch_name", "secret", "url"},
		"BatchWebhook":           {"batch_name", "url"},
		"WebhookEndpointCreated": {"createdAt", "events", "id", "secret", "url"},
		"BatchDeliveries":        {"batch_name", "deliveries"},
		"EndpointDeliveries":     {"deliveries", "endpointId"},
	} {
		sc := schemaOf(t, doc, name)
		req := strs(t, sc["required"], name+" required")
		sort.Strings(req)
		if !slices.Equal(req, want) || !slices.Equal(keysOf(obj(t, sc["properties"], name)), want) || sc["additionalProperties"] != false {
			t.Errorf("%s: required %v, properties %v, want exactly %v", name, req, keysOf(obj(t, sc["properties"], name)), want)
		}
	}

	// The outgoing notifications: batch.completed and every endpoint event,
	// each a signed POST whose payload names its own type.
	hooks := obj(t, doc["webhooks"], "webhooks")
	want := append([]string{"batch.completed"}, domain.EndpointEvents...)
	if got := keysOf(hooks); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("webhooks = %v, want %v", got, want)
	}
	for _, event := range want {
		item, ok := hooks[event].(map[string]any)
		if !ok {
			continue
		}
		op := obj(t, item["post"], event+" post")
		headers := map[string]bool{}
		for _, p := range op["parameters"].([]any) {
			pm := obj(t, p, event+" parameter")
			if pm["in"] == "header" && pm["required"] == true {
				headers[pm["name"].(string)] = true
			}
		}
		for _, h := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
			if !headers[h] {
				t.Errorf("webhook %s: required header %s not declared", event, h)
			}
		}
		responses := obj(t, op["responses"], event+" responses")
		for _, code := range []string{"2XX", "410", "default"} {
			if _, ok := responses[code]; !ok {
				t.Errorf("webhook %s: response %s not documented", event, code)
			}
		}
		desc, _ := op["description"].(string)
		for _, w := range []string{"2xx", "410", "Retry-After", "webhook-id"} {
			if !strings.Contains(desc, w) {
				t.Errorf("webhook %s: description lacks %q", event, w)
			}
		}
		for _, d := range projections.DefaultSchedule[1:] {
			if !strings.Contains(desc, humanDuration(d)) {
				t.Errorf("webhook %s: description lacks the retry wait %s (%v)", event, humanDuration(d), d)
			}
		}
		media := obj(t, obj(t, obj(t, op["requestBody"], event+" requestBody")["content"], event+" content")["application/json"], event+" application/json")
		sv, err := resolve(doc, media["schema"])
		if err != nil {
			t.Fatalf("webhook %s: %v", event, err)
		}
		typ := obj(t, obj(t, obj(t, sv, event+" schema")["properties"], event+" properties")["type"], event+" type")
		if typ["const"] != event && !slices.Contains(typ["enum"].([]any), any(event)) {
			t.Errorf("webhook %s: payload type %v does not admit it", event, typ)
		}
		for name, ex := range obj(t, media["examples"], event+" examples") {
			v := obj(t, obj(t, ex, name)["value"], name+" value")
			if v["type"] != event {
				t.Errorf("webhook %s: example %s has type %v", event, name, v["type"])
			}
		}
	}
	if n := len(projections.DefaultSchedule); n != 8 {
		t.Errorf("DefaultSchedule has %d attempts; the webhooks descriptions list 8", n)
	}

	// The event streams name their events, ids and resume.
	ops := operations(t, doc)
	for op, event := range map[string]string{"GET /v1/batches/{batch_name}/events": "event: batch", "GET /v1/jobs/{jobId}/events": "event: job"} {
		o, ok := ops[op]
		if !ok {
			continue
		}
		desc, _ := o["description"].(string)
		for _, w := range []string{event, "event: error", "id: <partition>-<offset>", "Last-Event-ID", ": keep-alive"} {
			if !strings.Contains(desc, w) {
				t.Errorf("%s: description lacks %q", op, w)
			}
		}
		ex, _ := obj(t, obj(t, obj(t, obj(t, o["responses"], op)["200"], op)["content"], op)["text/event-stream"], op)["example"].(string)
		if !strings.HasPrefix(ex, event+"\nid: ") {
			t.Errorf("%s: example does not start with %q", op, event)
		}
		for _, m := range regexp.MustCompile(`(?m)^id: (.*)$`).FindAllStringSubmatch(ex, -1) {
			if !lastEventID.MatchString(m[1]) {
				t.Errorf("%s: example id %q is not of the Last-Event-ID form", op, m[1])
			}
		}
	}
	if p := obj(t, obj(t, obj(t, doc["components"], "components")["parameters"], "parameters")["LastEventId"], "LastEventId"); obj(t, p["schema"], "LastEventId schema")["pattern"] != lastEventID.String() {
		t.Errorf("LastEventId pattern %v, want %s", obj(t, p["schema"], "")["pattern"], lastEventID)
	}
}

// humanDuration spells a retry wait as the descriptions do: 5 s, 5 min, 2 h.
func humanDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return strconv.Itoa(int(d/time.Second)) + " s"
}
