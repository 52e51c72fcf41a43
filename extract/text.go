package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// cell is one field of a line: a run of text set apart from its neighbours
// by two or more spaces (fixed-width text, PDF layout) or by a tab or
// delimiter (HTML tables, CSV). start and end are character columns for
// the former and field indexes for the latter.
type cell struct {
	start, end int
	text       string
}

// row is one line of the document. blank rows (and rule lines such as
// "-----") matter because they end multi-line descriptions.
type row struct {
	cells     []cell
	grid      bool
	blank     bool
	pageBreak bool
}

// textRows splits extracted text into rows of cells. Lines with tabs are
// grid rows, since only the HTML renderer and tab-separated exports put
// tabs in text; all other lines are split on runs of two or more spaces,
// which is how fixed-width layouts separate columns while single spaces
// separate words.
func textRows(text string) []row {
	var rows []row
	for pi, page := range strings.Split(text, "\f") {
		if pi > 0 {
			rows = append(rows, row{blank: true, pageBreak: true})
		}
		for _, line := range strings.Split(page, "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.Contains(line, "\t") {
				rows = append(rows, gridRow(strings.Split(line, "\t")))
				continue
			}
			rows = append(rows, spacedRow(line))
		}
	}
	return rows
}

func gridRow(fields []string) row {
	r := row{grid: true}
	empty := true
	for i, f := range fields {
		t := collapseSpace(f)
		if t != "" {
			empty = false
		}
		r.cells = append(r.cells, cell{start: i, end: i + 1, text: t})
	}
	r.blank = empty || isRule(r.cells)
	return r
}

func spacedRow(line string) row {
	var r row
	runes := []rune(line)
	i := 0
	for i < len(runes) {
		for i < len(runes) && unicode.IsSpace(runes[i]) {
			i++
		}
		if i >= len(runes) {
			break
		}
		start := i
		for i < len(runes) {
			if unicode.IsSpace(runes[i]) && (i+1 >= len(runes) || unicode.IsSpace(runes[i+1])) {
				break
			}
			i++
		}
		r.cells = append(r.cells, cell{start: start, end: i, text: collapseSpace(string(runes[start:i]))})
	}
	r.blank = len(r.cells) == 0 || isRule(r.cells)
	return r
}

// isRule spots separator lines made of dashes, equals signs and the like.
func isRule(cells []cell) bool {
	n := 0
	for _, c := range cells {
		for _, ch := range c.text {
			if !strings.ContainsRune("-=_*~+|.·—–", ch) {
				return false
			}
			n++
		}
	}
	return n >= 3
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// nonEmpty returns the cells that hold text.
func (r row) nonEmpty() []cell {
	out := make([]cell, 0, len(r.cells))
	for _, c := range r.cells {
		if c.text != "" {
			out = append(out, c)
		}
	}
	return out
}

func hasLetter(s string) bool {
	for len(s) > 0 {
		ch, n := utf8.DecodeRuneInString(s)
		if unicode.IsLetter(ch) {
			return true
		}
		s = s[n:]
	}
	return false
}
