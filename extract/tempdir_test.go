package extract_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/extract"
)

// TestCopiesForToolsGoUnderTempDir: the copy of an upload that poppler
// reads is written under TempDir, not $TMPDIR, and is gone when
// Preprocess returns. The pdfinfo here is a shell script that records the
// path it was given and whether the file was there, then fails as for an
// unreadable PDF.
func TestCopiesForToolsGoUnderTempDir(t *testing.T) {
	t.Parallel()
	tools, tmp, seen := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "seen")
	script := "#!/bin/sh\nif [ -f \"$1\" ]; then echo \"$1\" > " + seen + "; fi\nexit 1\n"
	for _, name := range []string{"pdfinfo", "pdftotext", "pdftoppm", "pdfimages"} {
		if err := os.WriteFile(filepath.Join(tools, name), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Not a PDF the pure-Go reader opens, so poppler is asked.
	_, err := extract.Preprocess(context.Background(), []byte("%PDF-1.4\nbroken"), "in.pdf",
		extract.Poppler(tools), extract.Tesseract(""), extract.TempDir(tmp))
	if extract.Code(err) != extract.CodeCorruptDocument {
		t.Fatalf("Preprocess: %v, want %s", err, extract.CodeCorruptDocument)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("pdfinfo did not find the copy it was given: %v", err)
	}
	if path := strings.TrimSpace(string(b)); !strings.HasPrefix(path, tmp+string(filepath.Separator)) {
		t.Fatalf("pdfinfo read %s, not a copy under %s", path, tmp)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Fatalf("after Preprocess, %s holds %d entries (%v)", tmp, len(left), err)
	}
}

// TestRelativeTempDirReachesTheTools: the tools run in the document's own
// directory, so the path they are given must not be relative to the
// process's. Not parallel: it changes the working directory.
func TestRelativeTempDirReachesTheTools(t *testing.T) {
	tools, seen, wd := t.TempDir(), filepath.Join(t.TempDir(), "seen"), t.TempDir()
	script := "#!/bin/sh\nif [ -f \"$1\" ]; then echo \"$1\" > " + seen + "; fi\nexit 1\n"
	for _, name := range []string{"pdfinfo", "pdftotext", "pdftoppm", "pdfimages"} {
		if err := os.WriteFile(filepath.Join(tools, name), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(wd)
	if err := os.Mkdir("rel", 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := extract.Preprocess(context.Background(), []byte("%PDF-1.4\nbroken"), "in.pdf",
		extract.Poppler(tools), extract.Tesseract(""), extract.TempDir("rel"))
	if extract.Code(err) != extract.CodeCorruptDocument {
		t.Fatalf("Preprocess: %v, want %s", err, extract.CodeCorruptDocument)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("pdfinfo, run in the document's directory, did not find the copy: %v", err)
	}
	if path := strings.TrimSpace(string(b)); !filepath.IsAbs(path) || !strings.HasPrefix(path, filepath.Join(wd, "rel")+string(filepath.Separator)) {
		t.Fatalf("pdfinfo read %s, not an absolute path under %s/rel", path, wd)
	}
}
