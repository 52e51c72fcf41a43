package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestAPIBlobStoreFailure breaks the blob store under a running node: an
// upload then answers 503 with Retry-After (the store is ours to fix, not
// the client's request), leaves no batch behind, and its Idempotency-Key is
// released, so the same request succeeds once the store works again.
func TestAPIBlobStoreFailure(t *testing.T) {
	t.Parallel()
	// The filesystem store, also when the suite keeps documents in S3: the
	// test breaks the store's directory, and the API's handling of a store
	// failure is the same for both stores.
	tn := setup(t, func(c *Config) { c.BlobStore, c.S3Endpoint = "", "" })
	auth := "Bearer " + tn.key
	blobDir := tn.cfg.BlobDir
	if blobDir == "" {
		blobDir = filepath.Join(tn.cfg.DataDir, "blobs")
	}
	// A file where the store's temp directory was makes every Put fail.
	tmp := filepath.Join(blobDir, "tmp")
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	post := func() reply {
		body, ct := multipartBody(t, "a.txt", textInvoice(1), "ref-1")
		return tn.call("POST", "/v1/batches/blobfail/documents", auth, body, ct, map[string]string{"Idempotency-Key": "blob-1"})
	}
	r := post()
	r.envelope(t, http.StatusServiceUnavailable, "unavailable")
	if r.hdr.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	tn.call("GET", "/v1/batches/blobfail", auth, nil, "", nil).envelope(t, http.StatusNotFound, "not_found")

	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	var d docView
	post().decode(t, http.StatusCreated, &d)
	if res := tn.results("blobfail"); res.Batch.Total != 1 || len(res.Documents) != 1 || res.Documents[0].ID != d.ID {
		t.Fatalf("after the store recovered the batch holds %+v", res)
	}
}
