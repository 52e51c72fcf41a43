package extract

import "path/filepath"

// DefaultMaxPages is the page limit used when MaxPages is not given. It is
// far above any real invoice yet keeps a hostile or mistaken upload (a
// scanned book, say) from tying up a worker.
const DefaultMaxPages = 500

// DefaultOCRLanguages is the Tesseract language set used when OCRLanguages
// is not given: English, the one pack every tesseract-ocr install has.
const DefaultOCRLanguages = "eng"

// Option configures Preprocess, in the functional-option style so that new
// settings can be added without breaking callers.
type Option func(*config)

type config struct {
	maxPages int
	tools    tools
	ocrLangs string
	// tempDir holds the copies of an upload that poppler and Tesseract
	// read; "" is os.TempDir().
	tempDir string
	// pdfEngine forces one PDF text engine ("go" or "poppler") instead of
	// the default (Go first, poppler as second opinion); the benchmarks
	// and the engine comparison use it.
	pdfEngine string
	// testHook, when set, runs inside the parsing goroutine before any
	// parser; tests use it to prove that panics are recovered.
	testHook func()
}

func newConfig(opts []Option) config {
	c := config{maxPages: DefaultMaxPages, tools: toolsOnPath(), ocrLangs: DefaultOCRLanguages}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// MaxPages sets the largest page count Preprocess accepts; a PDF or TIFF
// with more pages fails with CodeTooManyPages before any page is read or
// rasterised. The default is DefaultMaxPages (500). A value below 1 keeps
// the default, since a limit of zero pages would reject every document.
func MaxPages(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxPages = n
		}
	}
}

// Tesseract sets the path of the tesseract program used for images and for
// PDF pages without a text layer. "" disables OCR: such documents then fail
// with CodeOCRUnavailable. The default is "tesseract" looked up on PATH
// (disabled when it is not there).
func Tesseract(path string) Option { return func(c *config) { c.tools.tesseract = path } }

// Poppler sets the directory holding poppler's pdftotext, pdfinfo,
// pdftoppm and pdfimages. "" disables poppler: text PDFs are then read by the built-in
// pure-Go reader and textless PDF pages cannot be rasterised for OCR. The
// default is the programs found on PATH.
func Poppler(dir string) Option {
	return func(c *config) {
		if dir == "" {
			c.tools.pdftotext, c.tools.pdfinfo, c.tools.pdftoppm, c.tools.pdfimages = "", "", "", ""
			return
		}
		c.tools.pdftotext = filepath.Join(dir, "pdftotext")
		c.tools.pdfinfo = filepath.Join(dir, "pdfinfo")
		c.tools.pdftoppm = filepath.Join(dir, "pdftoppm")
		c.tools.pdfimages = filepath.Join(dir, "pdfimages")
	}
}

// OCRLanguages sets Tesseract's languages, "+"-separated ("eng+deu+fra");
// each needs its tesseract-ocr-LANG package. Default DefaultOCRLanguages.
func OCRLanguages(langs string) Option {
	return func(c *config) {
		if langs != "" {
			c.ocrLangs = langs
		}
	}
}

// TempDir sets the directory under which the copies of an upload that
// poppler and Tesseract read are written (in a directory of their own for
// each document, removed when it is read). A process that is killed while
// it extracts cannot remove them, so a service gives each node a directory
// it empties when it starts. The default is "", os.TempDir().
func TempDir(dir string) Option { return func(c *config) { c.tempDir = dir } }

// withPDFEngine forces the PDF text engine: "go" (no poppler fallback) or
// "poppler"; benchmarks and the engine comparison use it.
func withPDFEngine(name string) Option { return func(c *config) { c.pdfEngine = name } }

// withTestHook runs fn where a parser would run; only tests use it.
func withTestHook(fn func()) Option {
	return func(c *config) { c.testHook = fn }
}
