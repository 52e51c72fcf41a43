package extract

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// tools are the external programs Preprocess may run. An empty path means
// the program is not available; the document then takes the fallback path
// (the pure-Go PDF reader) or fails with CodeOCRUnavailable (OCR).
type tools struct {
	tesseract string // OCR: images and PDF pages without a text layer
	pdftotext string // poppler: positioned words of text PDFs
	pdfinfo   string // poppler: page count
	pdftoppm  string // poppler: rasterising textless pages for OCR
	pdfimages string // poppler: the resolution of a scanned page's image
}

var (
	pathToolsOnce sync.Once
	pathTools     tools
)

// toolsOnPath looks the programs up once per process: PATH does not change
// under a running service, and a lookup per document would cost a stat per
// PATH entry.
func toolsOnPath() tools {
	pathToolsOnce.Do(func() {
		look := func(name string) string {
			p, err := exec.LookPath(name)
			if err != nil {
				return ""
			}
			return p
		}
		pathTools = tools{tesseract: look("tesseract"), pdftotext: look("pdftotext"), pdfinfo: look("pdfinfo"), pdftoppm: look("pdftoppm"), pdfimages: look("pdfimages")}
	})
	return pathTools
}

func (t tools) poppler() bool { return t.pdftotext != "" && t.pdfinfo != "" }

func (t tools) canRasterise() bool { return t.tesseract != "" && t.pdftoppm != "" }

// maxToolOutput caps what is read from a tool's stdout. An invoice page of
// words with boxes is tens of kilobytes; a hostile file must not make a
// worker buffer gigabytes.
const maxToolOutput = 64 << 20

// errToolOutput marks output over maxToolOutput.
var errToolOutput = errors.New("extract: tool output too large")

// runTool runs a program under ctx (so the document's deadline kills it) in
// dir and returns its stdout. Tesseract is held to one thread: a worker
// already processes several documents at once, and OpenMP threads fighting
// over the same cores made a page slower, not faster, when measured.
func runTool(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	out := &limitedBuffer{max: maxToolOutput}
	stderr := &limitedBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = out, stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctxError(ctx.Err())
	}
	if out.over {
		return nil, errToolOutput
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.buf.Bytes(), &toolError{name: name, err: err, stderr: stderr.buf.String()}
		}
		return nil, err
	}
	return out.buf.Bytes(), nil
}

// toolError is a program that ran and failed; its stderr says why.
type toolError struct {
	name, stderr string
	err          error
}

func (e *toolError) Error() string {
	first, _, _ := strings.Cut(strings.TrimSpace(e.stderr), "\n")
	return filepath.Base(e.name) + ": " + e.err.Error() + ": " + first
}
func (e *toolError) Unwrap() error { return e.err }

type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		l.over = true
		l.buf.Write(p[:max(0, l.max-l.buf.Len())])
		return len(p), nil
	}
	return l.buf.Write(p)
}

// tempDir makes a directory for the files a tool reads or writes, under
// root ("" is os.TempDir()), and returns its absolute path: runTool runs
// the tool in it, and a relative path would be resolved from there.
func tempDir(root, pattern string) (string, error) {
	dir, err := os.MkdirTemp(root, pattern)
	if err != nil {
		return "", newError(CodeInternal, err, "temporary directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", newError(CodeInternal, err, "temporary directory")
	}
	return abs, nil
}
