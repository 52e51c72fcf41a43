package extract

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// popplerScale turns the height of a pdftotext word box (the font's ascent
// plus descent) into a font size for layoutPage.
const popplerScale = 1.0

var (
	rePagesLine = regexp.MustCompile(`(?m)^Pages:\s+(\d+)\s*$`)
	reBBox      = regexp.MustCompile(`<page\b|<line\b|<word xMin="([-0-9.e+]+)" yMin="([-0-9.e+]+)" xMax="([-0-9.e+]+)" yMax="([-0-9.e+]+)">([^<]*)</word>`)
)

// popplerPageCount asks pdfinfo. A file pdfinfo cannot open is corrupt:
// poppler is the more forgiving reader, so when it gives up nothing will
// read the file.
func popplerPageCount(ctx context.Context, dir, file string, cfg config) (int, error) {
	out, err := runTool(ctx, dir, cfg.tools.pdfinfo, file)
	if err != nil {
		if Code(err) == CodeTimeout {
			return 0, err
		}
		return 0, newError(CodeCorruptDocument, err, "unreadable PDF")
	}
	m := rePagesLine.FindSubmatch(out)
	if m == nil {
		return 0, newError(CodeCorruptDocument, nil, "PDF page count not found")
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil || n <= 0 {
		return 0, newError(CodeCorruptDocument, err, "PDF has no pages")
	}
	return n, nil
}

// popplerPages lays out every page from pdftotext's word boxes.
func popplerPages(ctx context.Context, dir, file string, n int, cfg config) ([]string, error) {
	out, err := runTool(ctx, dir, cfg.tools.pdftotext, "-q", "-bbox-layout", "-enc", "UTF-8", "-f", "1", "-l", strconv.Itoa(n), file, "-")
	if err != nil {
		if Code(err) == CodeTimeout {
			return nil, err
		}
		return nil, newError(CodeCorruptDocument, err, "unreadable PDF")
	}
	words := parseBBoxLayout(string(out))
	pages := make([]string, n)
	for i := range pages {
		if i < len(words) {
			pages[i] = layoutPage(wordsToRuns(words[i], popplerScale))
		}
	}
	return pages, nil
}

// parseBBoxLayout reads `pdftotext -bbox-layout` XHTML into words per page.
// The output has a fixed shape (page, flow, block, line, word), so matching
// the three elements we need is enough; a full XML parser would also choke
// on the control characters some PDFs put into words.
func parseBBoxLayout(s string) [][]word {
	var pages [][]word
	line := 0
	for _, m := range reBBox.FindAllStringSubmatch(s, -1) {
		switch {
		case m[0] == "<page":
			pages = append(pages, nil)
		case m[0] == "<line":
			line++
		case len(pages) > 0:
			var v [4]float64
			ok := true
			for i := range v {
				f, err := strconv.ParseFloat(m[i+1], 64)
				ok = ok && err == nil
				v[i] = f
			}
			text := strings.TrimSpace(html.UnescapeString(m[5]))
			if ok && text != "" && v[3] > v[1] {
				p := len(pages) - 1
				pages[p] = append(pages[p], word{x0: v[0], y0: v[1], x1: v[2], y1: v[3], text: text, line: line})
			}
		}
	}
	return pages
}

// ocrPDFPage rasterises one page and reads it. The resolution is that of
// the scan the page holds, between 200 and 300 dpi: rendering a 200 dpi
// scan at 300 dpi adds no detail, only pixels (Tesseract's time grows with
// them: 1.5 s against 0.9 s for the corpus's scanned page, same result),
// and 300 dpi is Tesseract's sweet spot when the page has no image or one
// of higher resolution.
func ocrPDFPage(ctx context.Context, dir, file string, page int, cfg config) (string, error) {
	prefix := filepath.Join(dir, "page"+strconv.Itoa(page))
	p := strconv.Itoa(page)
	dpi := strconv.Itoa(scanDPI(ctx, dir, file, p, cfg))
	if _, err := runTool(ctx, dir, cfg.tools.pdftoppm, "-q", "-r", dpi, "-gray", "-singlefile", "-f", p, "-l", p, file, prefix); err != nil {
		if Code(err) == CodeTimeout {
			return "", err
		}
		return "", newError(CodeCorruptDocument, err, "page %d cannot be rendered", page)
	}
	raw, err := os.ReadFile(prefix + ".pgm")
	os.Remove(prefix + ".pgm")
	if err != nil {
		return "", newError(CodeInternal, err, "rendered page %d", page)
	}
	g, err := readPGM(raw)
	if err != nil {
		return "", newError(CodeInternal, err, "rendered page %d", page)
	}
	img, err := cleanPage(dir, "page"+p+"-clean.pgm", g)
	if err != nil {
		return "", err
	}
	defer os.Remove(img)
	words, err := ocr(ctx, dir, img, cfg)
	if err != nil {
		return "", err
	}
	return layoutPage(wordsToRuns(words[1], ocrScale)), nil
}

// scanDPI is the highest resolution of the images on the page, from
// `pdfimages -list`, clamped to 200..300; 300 when it cannot be told.
func scanDPI(ctx context.Context, dir, file, page string, cfg config) int {
	if cfg.tools.pdfimages == "" {
		return 300
	}
	out, err := runTool(ctx, dir, cfg.tools.pdfimages, "-list", "-f", page, "-l", page, file)
	if err != nil {
		return 300
	}
	return imageDPI(string(out))
}

// imageDPI reads the x-ppi column of `pdfimages -list` output.
func imageDPI(list string) int {
	best := 0
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		// page num type width height color comp bpc enc interp object ID x-ppi y-ppi size ratio
		if len(f) < 14 || f[2] != "image" {
			continue
		}
		if v, err := strconv.Atoi(f[12]); err == nil && v > best {
			best = v
		}
	}
	if best == 0 {
		return 300
	}
	return min(300, max(200, best))
}
