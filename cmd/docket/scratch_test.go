package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/docket/docket/internal/scratch"
)

// TestStartRemovesWhatAKilledNodeLeftInScratch: a node killed while poppler
// or Tesseract read a copy of an upload, or while an upload was spooled
// for S3, leaves those files under <data-dir>/scratch with its lock free. The
// next start removes them and keeps a directory of its own, which a stop
// in order removes with its lock.
func TestStartRemovesWhatAKilledNodeLeftInScratch(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	tn.stop()
	root := tn.cfg.scratchDir()
	if left, err := os.ReadDir(root); err != nil || len(left) != 0 {
		t.Fatalf("after a stop in order, %s holds %v (%v)", root, left, err)
	}
	killed, err := scratch.Claim(root)
	if err != nil {
		t.Fatal(err)
	}
	pdf := filepath.Join(killed.Path(), "docket-pdf-1", "in.pdf")
	if err := os.MkdirAll(filepath.Dir(pdf), 0o700); err != nil {
		t.Fatal(err)
	}
	spooled := filepath.Join(root, "docket-s3-put-1") // a stray without a lock
	for _, f := range []string{pdf, spooled} {
		if err := os.WriteFile(f, []byte("%PDF-1.4 a customer's invoice"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	killed.Abandon() // its process is gone: the lock is free

	tn.start()
	for _, gone := range []string{killed.Path(), killed.Path() + scratch.LockSuffix, spooled} {
		if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the start: %v", gone, err)
		}
	}
	own := tn.n.scratch.Path()
	if filepath.Dir(own) != root {
		t.Fatalf("the node's temporary directory %s is not under %s", own, root)
	}
	if _, code := tn.upload("after-a-kill", "inv.txt", textInvoice(1), ""); code != http.StatusCreated {
		t.Fatalf("upload after the start: %d", code)
	}
	tn.stop()
	for _, gone := range []string{own, own + scratch.LockSuffix} {
		if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after a stop in order: %v", gone, err)
		}
	}
}

// TestBlobDirInsideScratchIsRefused: the node empties <data-dir>/scratch
// of what no running node holds, so a blob directory there would lose its
// documents at the next start. The data dir itself, whose blob store's
// temporary files go to <data-dir>/tmp, and a sibling are fine.
func TestBlobDirInsideScratchIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, blobDir, err string
	}{
		{"the scratch dir", "scratch", "--blob-dir"},
		{"under it", "scratch/blobs", "--blob-dir"},
		{"through ..", "views/../scratch/x", "--blob-dir"},
		{"the data dir", ".", ""},
		{"a sibling named like it", "scratch-blobs", ""},
		{"the default", "", ""},
	} {
		validated(t, tc.name, func(c *Config) {
			if tc.blobDir != "" {
				c.BlobStore, c.BlobDir = "", filepath.Join(c.DataDir, tc.blobDir)
			}
		}, tc.err)
	}
}

// TestRelativeDataDirReadsScannedPDFs: with a relative --data-dir (the
// default is ./docket-data), a PDF without a text layer goes through
// pdftoppm and Tesseract, which run in the document's own directory under
// scratch: a relative path to its copy was resolved from there and
// failed every such document as corrupt_document.
func TestRelativeDataDirReadsScannedPDFs(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"pdftoppm", "pdfinfo", "pdftotext", "tesseract"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing; .ci/run installs it", tool)
			}
			t.Skipf("%s is missing (apt-get install poppler-utils tesseract-ocr)", tool)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, t.TempDir())
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("no relative path to the test's directory: %q, %v", rel, err)
	}
	tn := setup(t, func(c *Config) { c.DataDir = rel })
	name := "inv-clearview-medical-usd-scanned.pdf"
	data, exp := corpus(t, name)
	res := tn.processBatch("scanned", map[string][]byte{name: data})
	if len(res.Documents) != 1 {
		t.Fatalf("%d documents", len(res.Documents))
	}
	d := res.Documents[0]
	if d.Status != "succeeded" || len(d.LineItems) != len(exp.LineItems) {
		t.Fatalf("%s with data dir %s: %s, %d line items (want %d), error %+v", name, rel, d.Status, len(d.LineItems), len(exp.LineItems), d.ProcessingError)
	}
}
