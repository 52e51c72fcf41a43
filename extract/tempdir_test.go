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
// Preprocess returns (askPoppler).
func TestCopiesForToolsGoUnderTempDir(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	seen := askPoppler(t, tmp)
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
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.Mkdir("rel", 0o700); err != nil {
		t.Fatal(err)
	}
	seen := askPoppler(t, "rel")
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("pdfinfo, run in the document's directory, did not find the copy: %v", err)
	}
	if path := strings.TrimSpace(string(b)); !filepath.IsAbs(path) || !strings.HasPrefix(path, filepath.Join(wd, "rel")+string(filepath.Separator)) {
		t.Fatalf("pdfinfo read %s, not an absolute path under %s/rel", path, wd)
	}
}

// askPoppler preprocesses a PDF the pure-Go reader cannot open, so that
// poppler is asked, with copies under tempDir. Poppler here is four shell
// scripts that write the path they were given to the returned file if
// that path names a file from where they run (the copy's own directory),
// then fail as for an unreadable PDF.
func askPoppler(t *testing.T, tempDir string) (seen string) {
	t.Helper()
	tools, seen := t.TempDir(), filepath.Join(t.TempDir(), "seen")
	script := "#!/bin/sh\nif [ -f \"$1\" ]; then echo \"$1\" > " + seen + "; fi\nexit 1\n"
	for _, name := range []string{"pdfinfo", "pdftotext", "pdftoppm", "pdfimages"} {
		if err := os.WriteFile(filepath.Join(tools, name), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_, err := extract.Preprocess(context.Background(), []byte("%PDF-1.4\nbroken"), "in.pdf",
		extract.Poppler(tools), extract.Tesseract(""), extract.TempDir(tempDir))
	if extract.Code(err) != extract.CodeCorruptDocument {
		t.Fatalf("Preprocess: %v, want %s", err, extract.CodeCorruptDocument)
	}
	return seen
}
