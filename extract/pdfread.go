package extract

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// readPDF lays out the text of every page and OCRs the pages that have
// none (scans wrapped in a PDF).
//
// Which engine reads the text layer was decided by measurement over the
// corpus (see README, "Extraction"): both read every text PDF of the
// corpus with the same item F1, and the pure-Go reader does a one-page
// invoice in about a millisecond while poppler needs two process starts
// (pdfinfo, pdftotext), tens of milliseconds. So the pure-Go reader is
// primary, and poppler is the second opinion for files it cannot open
// (broken cross-reference tables that poppler reconstructs, features the
// small library lacks) and for text it decodes into garbage (fonts without
// a usable ToUnicode map). Poppler is also what rasterises textless pages
// for OCR.
func readPDF(ctx context.Context, data []byte, cfg config) (*Document, error) {
	tmp := &tempPDF{data: data, root: cfg.tempDir}
	defer tmp.remove()
	var (
		n     int
		pages []string
		err   error
	)
	if cfg.pdfEngine == "poppler" && cfg.tools.poppler() {
		n, pages, err = popplerRead(ctx, tmp, cfg)
	} else {
		n, pages, err = goPDFPages(ctx, data, cfg)
		second := Code(err) == CodeCorruptDocument || Code(err) == CodeInternal || err == nil && garbled(pages)
		if second && cfg.tools.poppler() && cfg.pdfEngine == "" {
			if pn, pp, perr := popplerRead(ctx, tmp, cfg); perr == nil || err != nil {
				n, pages, err = pn, pp, perr
			}
		}
	}
	if err != nil {
		return nil, err
	}
	doc := &Document{ContentType: ctPDF, Pages: n}
	var textless []int
	for i, p := range pages {
		if strings.TrimSpace(p) == "" {
			textless = append(textless, i)
		}
	}
	if len(textless) > 0 && cfg.tools.canRasterise() {
		dir, file, err := tmp.path()
		if err != nil {
			return nil, err
		}
		for _, i := range textless {
			t, err := ocrPDFPage(ctx, dir, file, i+1, cfg)
			if err != nil {
				return nil, err
			}
			pages[i] = t
		}
	}
	doc.Text = strings.Join(pages, "\f")
	if strings.TrimSpace(doc.Text) == "" {
		if !cfg.tools.canRasterise() {
			return doc, newError(CodeOCRUnavailable, nil, "the PDF has no text layer and OCR (tesseract, pdftoppm) is not installed")
		}
		return nil, newError(CodeEmptyDocument, nil, "the PDF has no text, also not by OCR")
	}
	return doc, nil
}

// garbled reports text the pure-Go reader decoded wrongly: fonts without a
// usable ToUnicode map come out as replacement, control or private-use
// characters. One in twenty is far more than any real invoice prints.
func garbled(pages []string) bool {
	bad, all := 0, 0
	for _, p := range pages {
		for _, r := range p {
			if r == ' ' || r == '\n' || r == '\f' {
				continue
			}
			all++
			if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Co, r) {
				bad++
			}
		}
	}
	return all > 0 && bad*20 > all
}

// popplerRead reads the PDF with poppler: page count first, so that the
// page limit holds before any page is laid out.
func popplerRead(ctx context.Context, tmp *tempPDF, cfg config) (int, []string, error) {
	dir, file, err := tmp.path()
	if err != nil {
		return 0, nil, err
	}
	n, err := popplerPageCount(ctx, dir, file, cfg)
	if err != nil {
		return 0, nil, err
	}
	if n > cfg.maxPages {
		return n, nil, tooManyPages(n, cfg)
	}
	pages, err := popplerPages(ctx, dir, file, n, cfg)
	return n, pages, err
}

// tempPDF writes the upload to a private temporary directory the first
// time an external program needs it, and removes it at the end.
type tempPDF struct {
	data      []byte
	root      string // where its directory is made; "" is os.TempDir()
	dir, file string
}

func (t *tempPDF) path() (string, string, error) {
	if t.file != "" {
		return t.dir, t.file, nil
	}
	dir, err := tempDir(t.root, "docket-pdf-")
	if err != nil {
		return "", "", err
	}
	file := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(file, t.data, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", "", newError(CodeInternal, err, "temporary file")
	}
	t.dir, t.file = dir, file
	return dir, file, nil
}

func (t *tempPDF) remove() {
	if t.dir != "" {
		os.RemoveAll(t.dir)
	}
}
