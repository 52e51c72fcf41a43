package api

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/domain"
)

// FuzzBatchName: a {batch_name} the router hands over is either accepted
// as it is — 1 to 128 of [A-Za-z0-9._-], not starting with '.', so it can
// never climb out of a key prefix or a path — or refused with a domain
// invalid error (which the API answers 404 or 400).
func FuzzBatchName(f *testing.F) {
	for _, s := range []string{"march", "a", ".", "..", ".hidden", "a/b", "a%2Fb", "b\u00e4tch", strings.Repeat("n", 128),
		strings.Repeat("n", 129), "", "a b", "a\x00b", "\u202e", "x?y", "../../etc", "-_.", "A.b-C_9"} {
		f.Add(s)
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)
	f.Fuzz(func(t *testing.T, name string) {
		r := mux.SetURLVars(httptest.NewRequest("GET", "/", nil), map[string]string{"batch_name": name})
		got, err := batchName(r)
		switch {
		case err == nil && (got != name || !valid.MatchString(name)):
			t.Fatalf("accepted %q as %q", name, got)
		case err != nil && (valid.MatchString(name) || !domain.IsInvalid(err)):
			t.Fatalf("refused %q: %v", name, err)
		}
	})
}

// FuzzIdempotencyKey: accepted keys are exactly 1 to 255 printable ASCII
// characters; every other key is a client error.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"k", "3f1c9a52-upload-1", "", " ", "a\tb", "a\nb", "\x7f", "é", strings.Repeat("k", 255), strings.Repeat("k", 256), "\xff"} {
		f.Add(s)
	}
	valid := regexp.MustCompile(`^[ -~]{1,255}$`)
	f.Fuzz(func(t *testing.T, key string) {
		err := validIdempotencyKey(key)
		if (err == nil) != valid.MatchString(key) {
			t.Fatalf("key %q: %v", key, err)
		}
		if err != nil {
			if status, _ := classify(err); status != http.StatusBadRequest {
				t.Fatalf("key %q: status %d", key, status)
			}
		}
	})
}

// FuzzMultipartUpload feeds readUpload arbitrary bodies under a fixed
// boundary. It must never panic; it either returns a stored, non-empty
// file that is byte-identical to the blob store's copy, with a clean file
// name and a valid reference, or an error the API answers with a 4xx.
func FuzzMultipartUpload(f *testing.F) {
	const boundary = "fuzzboundary"
	seed := func(parts ...[3]string) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.SetBoundary(boundary)
		for _, p := range parts {
			if p[1] != "" {
				w, _ := mw.CreateFormFile(p[0], p[1])
				_, _ = io.WriteString(w, p[2])
			} else {
				_ = mw.WriteField(p[0], p[2])
			}
		}
		_ = mw.Close()
		return buf.Bytes()
	}
	good := seed([3]string{"file", "inv.txt", "INVOICE 1\nWidget 2 x 3.00 = 6.00\n"}, [3]string{"reference", "", "PO-1"})
	for _, b := range [][]byte{
		good, good[:len(good)/2], good[:len(good)-3], seed(), seed([3]string{"reference", "", "r"}),
		seed([3]string{"file", "../../etc/passwd", "x"}), seed([3]string{"file", "a", "x"}, [3]string{"file", "b", "y"}),
		seed([3]string{"file", "a", ""}), seed([3]string{"file", "a", "x"}, [3]string{"reference", "", "a\nb"}),
		seed([3]string{"other", "", "x"}), []byte("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x\"\r\n\r\nabc"),
		bytes.Repeat([]byte("--"+boundary+"\r\n"), 50), []byte("garbage"), nil,
	} {
		f.Add(b)
	}
	blobs, err := blobstore.NewFS(f.TempDir(), blobstore.MaxSize(4096))
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{cfg: Config{MaxUpload: 4096}, blobs: blobs}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/documents", bytes.NewReader(body))
		r.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		w := httptest.NewRecorder()
		up, err := s.readUpload(r, w)
		if err != nil {
			if status, _ := classify(err); status < 400 || status > 499 {
				t.Fatalf("error %v answers %d", err, status)
			}
			return
		}
		if up.blob.Size <= 0 || up.blob.Size > 4096 || up.fileName == "" || strings.ContainsAny(up.fileName, "/\\") ||
			up.fileName == "." || up.fileName == ".." || !utf8.ValidString(up.fileName) {
			t.Fatalf("accepted %+v", up)
		}
		if err := domain.ValidateReference(up.reference); err != nil {
			t.Fatalf("accepted reference %q", up.reference)
		}
		rc, err := blobs.Open(context.Background(), up.blob.Key)
		if err != nil {
			t.Fatalf("stored blob: %v", err)
		}
		stored, _ := io.ReadAll(rc)
		rc.Close()
		if int64(len(stored)) != up.blob.Size || !bytes.Contains(body, stored) {
			t.Fatalf("stored %d bytes, reported %d, not from the body", len(stored), up.blob.Size)
		}
	})
}
