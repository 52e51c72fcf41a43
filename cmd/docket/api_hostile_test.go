package main

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// part is one multipart part: a file when file is set, else a form field.
type part struct{ field, file, content string }

func rawMultipart(t *testing.T, parts ...part) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := `form-data; name="` + p.field + `"`
		if p.file != "" {
			cd += `; filename="` + p.file + `"`
			h.Set("Content-Type", "text/plain")
		}
		h.Set("Content-Disposition", cd)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(p.content))
	}
	_ = mw.Close()
	return &buf, mw.FormDataContentType()
}

// logEnd is the default org's end offset: a request that appends nothing
// leaves it where it was.
func (tn *testNode) logEnd() int64 {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end, err := tn.n.store.EndOffsets(ctx)
	if err != nil {
		tn.t.Fatal(err)
	}
	return end[tn.n.store.PartitionFor(domain.OrgID("default"))]
}

// TestAPIHostileUploads sends malformed and hostile uploads: each is a 4xx
// envelope, and none leaves a document, a batch or an event behind.
func TestAPIHostileUploads(t *testing.T) {
	t.Parallel()
	tn := setup(t, func(c *Config) { c.MaxUpload = 1024 })
	auth := "Bearer " + tn.key
	if _, code := tn.upload("h", "first.txt", textInvoice(1), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	before := tn.logEnd()
	unchanged := func(what string) {
		t.Helper()
		if b := tn.waitBatch("h", func(batchView) bool { return true }); b.Total != 1 {
			t.Fatalf("%s: batch h now has %d documents", what, b.Total)
		}
		tn.call("GET", "/v1/batches/h2", auth, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
		if end := tn.logEnd(); end != before {
			t.Fatalf("%s: the log grew from %d to %d", what, before, end)
		}
	}
	inv := string(textInvoice(2))
	full, fullCT := rawMultipart(t, part{"file", "a.txt", strings.Repeat("x", 600)}, part{"reference", "", "r"})
	boundary := fullCT[strings.Index(fullCT, "boundary=")+len("boundary="):]
	cases := []struct {
		name   string
		body   func() (*bytes.Buffer, string)
		status int
		code   string
	}{
		{"json body", func() (*bytes.Buffer, string) { return bytes.NewBufferString(`{"file":"x"}`), "application/json" }, 415, "unsupported_media_type"},
		{"no content type", func() (*bytes.Buffer, string) { b, _ := multipartBody(t, "a.txt", []byte(inv), ""); return b, "" }, 415, "unsupported_media_type"},
		{"no boundary", func() (*bytes.Buffer, string) {
			b, _ := multipartBody(t, "a.txt", []byte(inv), "")
			return b, "multipart/form-data"
		}, 400, "invalid_request"},
		{"wrong boundary", func() (*bytes.Buffer, string) {
			b, _ := multipartBody(t, "a.txt", []byte(inv), "")
			return b, "multipart/form-data; boundary=nothere"
		}, 400, "invalid_request"},
		{"no file part", func() (*bytes.Buffer, string) { return rawMultipart(t, part{"reference", "", "r"}) }, 400, "invalid_request"},
		{"empty body", func() (*bytes.Buffer, string) { return rawMultipart(t) }, 400, "invalid_request"},
		{"two file parts", func() (*bytes.Buffer, string) {
			return rawMultipart(t, part{"file", "a.txt", inv}, part{"file", "b.txt", inv})
		}, 400, "invalid_request"},
		{"two references", func() (*bytes.Buffer, string) {
			return rawMultipart(t, part{"file", "a.txt", inv}, part{"reference", "", "r1"}, part{"reference", "", "r2"})
		}, 400, "invalid_request"},
		{"unknown field", func() (*bytes.Buffer, string) {
			return rawMultipart(t, part{"file", "a.txt", inv}, part{"comment", "", "hi"})
		}, 400, "invalid_request"},
		{"unknown field first", func() (*bytes.Buffer, string) {
			return rawMultipart(t, part{"files[]", "a.txt", inv}, part{"file", "a.txt", inv})
		}, 400, "invalid_request"},
		{"truncated in file", func() (*bytes.Buffer, string) {
			return bytes.NewBuffer(full.Bytes()[:full.Len()/2]), fullCT
		}, 400, "invalid_request"},
		{"truncated in closing boundary", func() (*bytes.Buffer, string) {
			return bytes.NewBuffer(full.Bytes()[:full.Len()-len(boundary)]), fullCT
		}, 400, "invalid_request"},
		{"garbage", func() (*bytes.Buffer, string) {
			return bytes.NewBufferString(strings.Repeat("\x00garbage", 50)), fullCT
		}, 400, "invalid_request"},
		{"oversized file", func() (*bytes.Buffer, string) {
			return multipartBody(t, "big.txt", bytes.Repeat([]byte("a"), 2048), "")
		}, 413, "payload_too_large"},
		{"one byte too many", func() (*bytes.Buffer, string) {
			return multipartBody(t, "big.txt", bytes.Repeat([]byte("a"), 1025), "")
		}, 413, "payload_too_large"},
		{"oversized body", func() (*bytes.Buffer, string) {
			return rawMultipart(t, part{"reference", "", strings.Repeat("r", 200<<10)}, part{"file", "a.txt", inv})
		}, 400, "invalid_request"},
		{"empty file", func() (*bytes.Buffer, string) { return multipartBody(t, "e.txt", nil, "") }, 400, "empty_file"},
		{"control characters in reference", func() (*bytes.Buffer, string) {
			return multipartBody(t, "a.txt", []byte(inv), "ref\x01\x1b[31m")
		}, 400, "invalid_request"},
		{"newline in reference", func() (*bytes.Buffer, string) { return multipartBody(t, "a.txt", []byte(inv), "a\nb") }, 400, "invalid_request"},
		{"invalid UTF-8 reference", func() (*bytes.Buffer, string) { return multipartBody(t, "a.txt", []byte(inv), "\xff\xfe") }, 400, "invalid_request"},
		{"long reference", func() (*bytes.Buffer, string) {
			return multipartBody(t, "a.txt", []byte(inv), strings.Repeat("é", 257))
		}, 400, "invalid_request"},
	}
	for _, c := range cases {
		for _, batch := range []string{"h", "h2"} {
			body, ct := c.body()
			tn.call("POST", "/v1/batches/"+batch+"/documents", auth, body, ct, nil).envelope(t, c.status, c.code)
			unchanged(c.name)
		}
	}

	// Batch names with path tricks: a client error (after any redirect a
	// client follows), never a server error, and nothing is created.
	for _, name := range []string{"..", "%2e%2e", "a%2Fb", "%2F", strings.Repeat("n", 129), "b%C3%A4tch", ".hidden",
		"a%20b", "a%00b", "%E2%80%AE", "x%3Fy", "..%2F..%2Fetc"} {
		for _, m := range []struct{ method, suffix string }{{"POST", "/documents"}, {"GET", ""}, {"GET", "/results"}, {"POST", "/process"}, {"DELETE", ""}} {
			body, ct := multipartBody(t, "a.txt", []byte(inv), "")
			r := tn.call(m.method, "/v1/batches/"+name+m.suffix, auth, body, ct, nil)
			if r.code < 400 || r.code > 499 {
				t.Fatalf("%s: %d %s", r.what, r.code, r.body)
			}
			if r.code != http.StatusMethodNotAllowed && r.code != http.StatusNotFound {
				r.envelope(t, http.StatusBadRequest, "invalid_request")
			}
		}
	}
	var list struct {
		Batches []batchView `json:"batches"`
	}
	tn.call("GET", "/v1/batches", auth, nil, "", nil).decode(t, http.StatusOK, &list)
	if len(list.Batches) != 1 || list.Batches[0].Name != "h" {
		t.Fatalf("batches after hostile names: %+v", list.Batches)
	}
	unchanged("batch names")

	// The largest allowed file is accepted; client file names keep only
	// their last element.
	for _, c := range []struct{ sent, stored string }{
		{"../../etc/passwd", "passwd"}, {`..\..\windows\boot.ini`, "boot.ini"}, {"/abs/path/x.pdf", "x.pdf"},
		{"..", "document"}, {"../..", "document"}, {"\u202etxt.exe", "\u202etxt.exe"},
	} {
		body, ct := rawMultipart(t, part{"file", c.sent, strings.Repeat("z", 1024)})
		var d docView
		tn.call("POST", "/v1/batches/names/documents", auth, body, ct, nil).decode(t, http.StatusCreated, &d)
		var again docView
		if code := tn.get("/v1/documents/"+d.ID, &again); code != http.StatusOK || d.FileName != c.stored || again.FileName != c.stored {
			t.Fatalf("file name %q stored as %q / %q (%d), want %q", c.sent, d.FileName, again.FileName, code, c.stored)
		}
	}
	tn.verify()
}

// TestAPITruncatedUploads cuts a valid upload at every byte: short of the
// closing delimiter ("--boundary--"), no cut is a document.
func TestAPITruncatedUploads(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	auth := "Bearer " + tn.key
	full, ct := rawMultipart(t, part{"file", "a.txt", "INVOICE #1 total 10.00"}, part{"reference", "", "ref"})
	end := bytes.LastIndex(full.Bytes(), []byte("--")) + 2 // just past the closing delimiter
	for cut := range end {
		r := tn.call("POST", "/v1/batches/cut/documents", auth, bytes.NewReader(full.Bytes()[:cut]), ct, nil)
		if r.code != http.StatusBadRequest {
			t.Errorf("cut at %d of %d (%q): %d %s", cut, full.Len(), full.Bytes()[max(0, cut-12):cut], r.code, r.body)
		}
	}
	tn.call("GET", "/v1/batches/cut", auth, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")
	// The complete body, with or without the final CRLF, is a document.
	for _, n := range []int{end, full.Len()} {
		var d docView
		tn.call("POST", "/v1/batches/cut/documents", auth, bytes.NewReader(full.Bytes()[:n]), ct, nil).decode(t, http.StatusCreated, &d)
		if d.Reference == nil || *d.Reference != "ref" || d.FileName != "a.txt" {
			t.Fatalf("complete upload = %+v", d)
		}
	}
}

// TestAPIRoutes: unknown routes, wrong methods and unknown ids answer with
// the envelope.
func TestAPIRoutes(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	auth := "Bearer " + tn.key
	if _, code := tn.upload("r", "a.txt", textInvoice(1), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	for _, c := range []struct {
		method, path, auth string
		status             int
		code               string
	}{
		{"GET", "/v1/nope", auth, 404, "not_found"},
		{"GET", "/nope", "", 404, "not_found"},
		{"GET", "/v2/batches", auth, 404, "not_found"},
		{"GET", "/v1/batches/r/documents/x", auth, 404, "not_found"},
		{"PUT", "/v1/batches/x", auth, 405, "method_not_allowed"},
		{"PATCH", "/v1/batches/r", auth, 405, "method_not_allowed"},
		{"POST", "/v1/batches", auth, 405, "method_not_allowed"},
		{"DELETE", "/v1/documents/doc_x", auth, 405, "method_not_allowed"},
		{"GET", "/v1/batches/r/process", auth, 405, "method_not_allowed"},
		{"POST", "/healthz", "", 405, "method_not_allowed"},
		{"POST", "/v1/batches/nosuch/process", auth, 404, "not_found"},
		{"POST", "/v1/batches/r/process?retry_failed=maybe", auth, 400, "invalid_request"},
		{"DELETE", "/v1/batches/nosuch", auth, 404, "not_found"},
		{"GET", "/v1/batches/nosuch/results", auth, 404, "not_found"},
		{"GET", "/v1/documents/doc_nosuch", auth, 404, "not_found"},
		{"GET", "/v1/documents/..", auth, 404, "not_found"},
	} {
		tn.call(c.method, c.path, c.auth, nil, "", nil).envelope(t, c.status, c.code)
	}
	// None of that touched batch r.
	b := tn.waitBatch("r", func(batchView) bool { return true })
	if b.Total != 1 || b.Status != "queued" || b.Counts["queued"] != 1 {
		t.Fatalf("batch r = %+v", b)
	}
}

// TestAPIPagination pages results and the batch list with opaque cursors,
// and refuses bad paging parameters.
func TestAPIPagination(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	var want []string
	for i := range 7 {
		d, code := tn.upload("pages", fmt.Sprintf("inv-%d.txt", i), textInvoice(i), "")
		if code != http.StatusCreated {
			t.Fatalf("upload %d: %d", i, code)
		}
		want = append(want, d.ID)
	}
	var got []string
	var sizes []int
	cursor := ""
	for len(sizes) < 10 {
		var r resultsView
		path := "/v1/batches/pages/results?limit=3"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		if code := tn.get(path, &r); code != http.StatusOK || r.Batch.Total != 7 {
			t.Fatalf("%s: %d %+v", path, code, r.Batch)
		}
		sizes = append(sizes, len(r.Documents))
		for _, d := range r.Documents {
			got = append(got, d.ID)
		}
		if r.NextCursor == nil {
			break
		}
		cursor = *r.NextCursor
	}
	if !slices.Equal(sizes, []int{3, 3, 1}) || !slices.Equal(got, want) {
		t.Fatalf("pages %v, ids %v, want upload order %v", sizes, got, want)
	}

	for _, name := range []string{"pc", "pa", "pb"} {
		if _, code := tn.upload(name, "x.txt", textInvoice(1), ""); code != http.StatusCreated {
			t.Fatalf("upload %s: %d", name, code)
		}
	}
	var names []string
	cursor = ""
	for range 10 {
		var l struct {
			Batches    []batchView `json:"batches"`
			NextCursor *string     `json:"next_cursor"`
		}
		path := "/v1/batches?limit=1"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		if code := tn.get(path, &l); code != http.StatusOK || len(l.Batches) != 1 {
			t.Fatalf("%s: %d %+v", path, code, l)
		}
		names = append(names, l.Batches[0].Name)
		if l.NextCursor == nil {
			break
		}
		cursor = *l.NextCursor
	}
	if !slices.Equal(names, []string{"pa", "pages", "pb", "pc"}) {
		t.Fatalf("batches by name: %v", names)
	}

	for _, q := range []string{"limit=0", "limit=1001", "limit=abc", "limit=-1", "limit=2.5", "cursor=!!!", "cursor=a%20b", "limit=2&cursor=" + strings.Repeat("QUFB", 200)} {
		for _, p := range []string{"/v1/batches?", "/v1/batches/pages/results?"} {
			tn.call("GET", p+q, "Bearer "+tn.key, nil, "", nil).envelope(t, http.StatusBadRequest, "invalid_request")
		}
	}
	// The largest limit is accepted.
	if r := tn.call("GET", "/v1/batches/pages/results?limit=1000", "Bearer "+tn.key, nil, "", nil); r.code != http.StatusOK {
		t.Fatalf("limit=1000: %d", r.code)
	}
}
