package extract

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

const (
	ctPDF   = "application/pdf"
	ctPlain = "text/plain"
	ctCSV   = "text/csv"
	ctHTML  = "text/html"
	ctPNG   = "image/png"
	ctJPEG  = "image/jpeg"
	ctTIFF  = "image/tiff"
)

// detect sniffs the content type. Uploads arrive with whatever name the
// sender's mail client invented, so the bytes decide; the name only breaks
// the tie between plain text and CSV, which can look alike.
func detect(data []byte, fileName string) (string, error) {
	head := data
	if len(head) > 1024 {
		head = head[:1024]
	}
	switch {
	case bytes.Contains(head, []byte("%PDF-")):
		return ctPDF, nil
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return ctPNG, nil
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		return ctJPEG, nil
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return ctTIFF, nil
	}
	if !looksLikeText(data) {
		return "", newError(CodeUnsupportedFormat, nil, "unrecognised binary format")
	}
	text := decodeText(data)
	if looksLikeHTML(text) {
		return ctHTML, nil
	}
	if looksLikeCSV(text, strings.EqualFold(filepath.Ext(fileName), ".csv")) {
		return ctCSV, nil
	}
	return ctPlain, nil
}

// looksLikeText rejects data with NUL bytes or many control characters,
// which no text format we accept contains.
func looksLikeText(data []byte) bool {
	sample := data
	if len(sample) > 8192 {
		sample = sample[:8192]
	}
	bad := 0
	for _, b := range sample {
		switch {
		case b == 0:
			return false
		case b < 0x20 && b != '\n' && b != '\r' && b != '\t' && b != '\f':
			bad++
		}
	}
	return bad*100 <= len(sample)
}

// decodeText returns data as UTF-8. Text that is not valid UTF-8 is taken to
// be Windows-1252/Latin-1, the usual encoding of older exports.
func decodeText(data []byte) string {
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	for _, c := range data {
		if c >= 0x80 && c < 0xA0 {
			b.WriteRune(cp1252[c-0x80])
		} else {
			b.WriteRune(rune(c))
		}
	}
	return b.String()
}

var cp1252 = [32]rune{
	'€', '\uFFFD', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\uFFFD', 'Ž', '\uFFFD',
	'\uFFFD', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\uFFFD', 'ž', 'Ÿ',
}

func looksLikeHTML(text string) bool {
	head := strings.ToLower(strings.TrimSpace(text))
	if len(head) > 2048 {
		head = head[:2048]
	}
	if strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html") {
		return true
	}
	return strings.HasPrefix(head, "<") &&
		(strings.Contains(head, "<body") || strings.Contains(head, "<table") || strings.Contains(head, "<head"))
}

// looksLikeCSV accepts text whose records mostly have the same number (two
// or more) of fields for one delimiter. A .csv name lowers the bar, because
// a short export may have only a few records.
func looksLikeCSV(text string, named bool) bool {
	delim := csvDelimiter(text)
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = delim
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	recs, err := r.ReadAll()
	if err != nil || len(recs) < 2 {
		return false
	}
	counts := map[int]int{}
	for _, rec := range recs {
		counts[len(rec)]++
	}
	best, n := 0, 0
	for k, v := range counts {
		if v > n || (v == n && k > best) {
			best, n = k, v
		}
	}
	if best < 2 {
		return false
	}
	if named {
		return n*2 >= len(recs)
	}
	return n*10 >= len(recs)*9 && len(recs) >= 3
}

// csvDelimiter picks the separator that appears most often outside quotes
// in the first lines: semicolons for European spreadsheets, tabs for TSV.
// The quote state carries over line ends, because a quoted field (a
// multi-line description) may span lines.
func csvDelimiter(text string) rune {
	counts := map[rune]int{}
	inQ, lines := false, 0
	for _, c := range text {
		switch {
		case c == '"':
			inQ = !inQ
		case c == '\n':
			lines++
		case !inQ && (c == ',' || c == ';' || c == '\t'):
			counts[c]++
		}
		if lines >= 20 {
			break
		}
	}
	best := ','
	for _, c := range []rune{';', '\t'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return best
}
