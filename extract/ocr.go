package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// ocrScale turns the median height of OCR word boxes (the ink, from the
// cap or ascender line to the baseline, sometimes a descender) into a font
// size for layoutPage; measured on the corpus scans, where 10 pt text at
// 300 dpi gives boxes of about 33 px and a font size of about 42 px.
const ocrScale = 1.25

// maxImagePixels refuses images that would take Tesseract minutes and
// gigabytes: 120 megapixels is an A0 sheet at 300 dpi.
const maxImagePixels = 120_000_000

// readImage OCRs a PNG, JPEG or TIFF upload. Every page of a TIFF is read;
// the page count is checked against the limit before Tesseract starts.
func readImage(ctx context.Context, ct string, data []byte, cfg config) (*Document, error) {
	pages, err := imagePages(ct, data)
	if err != nil {
		return nil, err
	}
	doc := &Document{ContentType: ct, Pages: pages}
	if pages > cfg.maxPages {
		return nil, newError(CodeTooManyPages, nil, "the image has %d pages, the limit is %d", pages, cfg.maxPages)
	}
	if cfg.tools.tesseract == "" {
		return doc, newError(CodeOCRUnavailable, nil, "%s has no text layer and OCR (tesseract) is not installed", ct)
	}
	dir, err := tempDir(cfg.tempDir, "docket-ocr-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	name, err := ocrInput(dir, ct, data)
	if err != nil {
		return nil, err
	}
	byPage, err := ocr(ctx, dir, name, cfg)
	if err != nil {
		return nil, err
	}
	texts := make([]string, pages)
	for i := range texts {
		texts[i] = layoutPage(wordsToRuns(byPage[i+1], ocrScale))
	}
	doc.Text = strings.Join(texts, "\f")
	if strings.TrimSpace(doc.Text) == "" {
		return nil, newError(CodeEmptyDocument, nil, "OCR found no text in the %s", ct)
	}
	return doc, nil
}

// ocrInput writes the image for Tesseract: PNG and JPEG cleaned of table
// rules, TIFF as it came (the standard library has no TIFF decoder, and
// Tesseract reads every page of a TIFF itself).
func ocrInput(dir, ct string, data []byte) (string, error) {
	if ct == ctTIFF {
		name := filepath.Join(dir, "page.tif")
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return "", newError(CodeInternal, err, "temporary file")
		}
		return name, nil
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return "", newError(CodeCorruptDocument, err, "%s cannot be decoded", ct)
	}
	return cleanPage(dir, "page.pgm", toGray(img))
}

// cleanPage removes rules from a page image and writes it for Tesseract.
func cleanPage(dir, name string, g *image.Gray) (string, error) {
	removeRules(g, max(40, g.Bounds().Dx()/32))
	path := filepath.Join(dir, name)
	if err := writePGM(path, g); err != nil {
		return "", newError(CodeInternal, err, "temporary file")
	}
	return path, nil
}

// imagePages checks that the image header decodes and counts its pages.
func imagePages(ct string, data []byte) (int, error) {
	var w, h int
	switch ct {
	case ctPNG, ctJPEG:
		dec := png.DecodeConfig
		if ct == ctJPEG {
			dec = jpeg.DecodeConfig
		}
		c, err := dec(bytes.NewReader(data))
		if err != nil {
			return 0, newError(CodeCorruptDocument, err, "%s header is unreadable", ct)
		}
		w, h = c.Width, c.Height
	case ctTIFF:
		n, ok := tiffPages(data)
		if !ok {
			return 0, newError(CodeCorruptDocument, nil, "TIFF directory is unreadable")
		}
		return n, nil
	}
	if w <= 0 || h <= 0 {
		return 0, newError(CodeCorruptDocument, nil, "%s has no pixels", ct)
	}
	if w*h > maxImagePixels {
		return 0, newError(CodeUnsupportedFormat, nil, "%s is %dx%d pixels, more than %d", ct, w, h, maxImagePixels)
	}
	return 1, nil
}

// tiffPages counts the image directories of a TIFF (one per page). The
// chain is followed at most 10 000 steps so that a looping file ends.
func tiffPages(data []byte) (int, bool) {
	if len(data) < 8 {
		return 0, false
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if data[0] == 'M' {
		bo = binary.BigEndian
	}
	off := uint64(bo.Uint32(data[4:8]))
	n := 0
	seen := map[uint64]bool{}
	for off != 0 && n < 10000 {
		if seen[off] || off+2 > uint64(len(data)) {
			return n, n > 0
		}
		seen[off] = true
		entries := uint64(bo.Uint16(data[off:]))
		next := off + 2 + 12*entries
		if next+4 > uint64(len(data)) {
			return n, false
		}
		n++
		off = uint64(bo.Uint32(data[next:]))
	}
	return n, n > 0
}

// ocr runs Tesseract on one image file and returns its words by page
// (1-based). The page segmentation is Tesseract's default (automatic): it
// finds the blocks of a page itself, and the words' boxes, not its block
// order, decide the rows afterwards.
func ocr(ctx context.Context, dir, image string, cfg config) (map[int][]word, error) {
	out, err := runTool(ctx, dir, cfg.tools.tesseract, image, "stdout", "-l", cfg.ocrLangs, "tsv")
	if err != nil {
		if Code(err) == CodeTimeout {
			return nil, err
		}
		return nil, newError(CodeCorruptDocument, err, "OCR could not read the image")
	}
	return parseTesseractTSV(out), nil
}

// parseTesseractTSV reads `tesseract ... tsv`: one row per page, block,
// paragraph, line and word; only words (level 5) are kept. Words with no
// letter or digit and low confidence are specks and rules, not text.
func parseTesseractTSV(out []byte) map[int][]word {
	pages := map[int][]word{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(f) < 12 || f[0] != "5" {
			continue
		}
		var n [10]int
		ok := true
		for i := range 10 {
			v, err := strconv.Atoi(f[i])
			if err != nil {
				ok = false
				break
			}
			n[i] = v
		}
		conf, err := strconv.ParseFloat(f[10], 64)
		text := strings.TrimSpace(strings.Join(f[11:], " "))
		if !ok || err != nil || conf < 0 || text == "" || n[8] <= 0 || n[9] <= 0 {
			continue
		}
		if conf < 50 && !strings.ContainsFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		// What is left of a cell border (the stub where a tilted rule
		// meets another) comes back as "|", "_" or "—" glued to the word
		// beside it. None of these starts or ends a word on an invoice; a
		// plain "-" can (a trailing minus), so it stays.
		if text = strings.Trim(text, "|¦_—~"); text == "" {
			continue
		}
		text = fixOCRNumber(text)
		page, block, par, ln := n[1], n[2], n[3], n[4]
		pages[page] = append(pages[page], word{
			x0: float64(n[6]), y0: float64(n[7]), x1: float64(n[6] + n[8]), y1: float64(n[7] + n[9]),
			text: text, line: (block*1000+par)*1000 + ln,
		})
	}
	return pages
}

var reOCRMoney = regexp.MustCompile(`^([$€£S§]?)([0-9OoIl]{1,3}(?:[.,][0-9OoIl]{3})*[.,][0-9Oo]{2}|[0-9OoIl]+[.,][0-9Oo]{2})$`)

// fixOCRNumber repairs the misreadings OCR makes in amounts: "S" or "§"
// for "$", "O" for "0", "l" or "I" for "1". Only words shaped exactly like
// an amount with two decimals are touched, and only when they hold at
// least one real digit, so that words stay words.
func fixOCRNumber(w string) string {
	m := reOCRMoney.FindStringSubmatch(w)
	if m == nil || !strings.ContainsAny(m[2], "0123456789") {
		return w
	}
	sym := m[1]
	if sym == "S" || sym == "§" {
		sym = "$"
	}
	return sym + ocrDigits.Replace(m[2])
}

// ocrDigits undoes OCR's usual letter-for-digit confusions in an amount.
var ocrDigits = strings.NewReplacer("O", "0", "o", "0", "I", "1", "l", "1")
