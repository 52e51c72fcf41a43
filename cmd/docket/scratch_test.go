package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/docket/docket/internal/scratch"
)

// TestStartRemovesWhatAKilledNodeLeftInTmp: a node killed while poppler
// or Tesseract read a copy of an upload, or while an upload was spooled
// for S3, leaves those files under <data-dir>/tmp with its lock free. The
// next start removes them and keeps a directory of its own, which a stop
// in order removes with its lock.
func TestStartRemovesWhatAKilledNodeLeftInTmp(t *testing.T) {
	t.Parallel()
	tn := setup(t)
	tn.stop()
	root := filepath.Join(tn.cfg.DataDir, "tmp")
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
	spooled := filepath.Join(root, "docket-s3-put-1") // where S3 spooled before
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
