package extract

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// reSummary matches the labels of rows below (or between) the item rows
// that restate, adjust or settle the total rather than sell something.
var reSummary = regexp.MustCompile(`(?i)\b(?:sub-?totals?|totals?|grand total|tax(?:es)?|sales tax|vat|gst|hst|mwst|ust|tva|iva|discounts?|rabatt|skonto|shipping|freight|postage|handling|deposit|anzahlung|balance|payments?|paid|amount due|due now|carried forward|brought forward|net amount|nettobetrag|zwischensumme|gesamtbetrag|rechnungsbetrag|endbetrag|summe|service charge|promo\w*|coupon|credit|change|rounding|gratuity|tip|ht|ttc|visa|mastercard|amex|cash|contactless|continued)\b|zzgl|inkl\. \d+ ?% mwst`)

// fields is a row read through a header.
type fields struct {
	desc                     []string
	qty, price, amount       float64
	hasQty, hasPrice, hasAmt bool
	numeric, text            int // how many cells held numbers / words
	descStart                int
}

// findItems walks the rows, tracking the most recent table header (tables
// repeat their header on every page), and turns rows read through it into
// items. Text-only rows straight after an item and in its description
// column continue that item's description (cells aligned to the top).
// Text-only rows that start a row group, after the header or a blank line,
// and run straight into an item row are the first lines of that item's
// description (cells centred or aligned to the bottom, where the numbers
// sit on a later line than the description starts).
func findItems(rows []row, nf numberFormat) []Item {
	var (
		h         *header
		items     []Item
		canExtend bool
		pending   []string
		// prevLabels is the row before, if it held only short labels: the
		// first line of a two-line header.
		prevLabels *row
	)
	for _, r := range rows {
		if r.blank {
			canExtend, pending, prevLabels = false, nil, nil
			continue
		}
		hh, ok := parseHeader(r)
		if !ok && prevLabels != nil && labelsOnly(r) {
			// Headings printed over two lines ("Unit" above "Price").
			hh, ok = parseHeader(mergeRows(*prevLabels, r))
		}
		if ok {
			h, canExtend, pending, prevLabels = hh, false, nil, nil
			continue
		}
		prevLabels = nil
		if labelsOnly(r) {
			prevLabels = &r
		}
		if h == nil {
			continue
		}
		f := readRow(h, r, nf)
		full := f.hasQty && f.hasPrice && f.hasAmt && consistent(f.qty, f.price, f.amount)
		label := strings.Join(textCells(r, nf), " ")
		if !full && reSummary.MatchString(label) {
			canExtend, pending = false, nil
			continue
		}
		if f.hasAmt && len(f.desc) > 0 {
			// A capitalised description starts afresh: the text-only row
			// above it was a section heading ("Materials"), not its start.
			if first, _ := utf8.DecodeRuneInString(f.desc[0]); len(pending) > 0 && !unicode.IsUpper(first) {
				f.desc = append(pending, f.desc...)
			}
			items = append(items, f.item())
			canExtend, pending = true, nil
			continue
		}
		if f.numeric == 0 && continues(h, r) {
			if canExtend {
				last := &items[len(items)-1]
				last.Description = collapseSpace(last.Description + " " + label)
				continue
			}
			if len(pending) < 2 {
				pending = append(pending, label)
				continue
			}
		}
		canExtend, pending = false, nil
	}
	return items
}

func (f fields) item() Item {
	it := Item{Description: collapseSpace(strings.Join(f.desc, " ")), Amount: round2(f.amount)}
	switch {
	case f.hasQty && f.hasPrice:
		it.Quantity, it.UnitPrice = f.qty, f.price
	case f.hasQty:
		it.Quantity = f.qty
		if f.qty != 0 {
			it.UnitPrice = round2(f.amount / f.qty)
		}
	case f.hasPrice:
		it.UnitPrice = f.price
		if f.price != 0 {
			it.Quantity = round2(f.amount / f.price)
		}
	default:
		it.Quantity, it.UnitPrice = 1, f.amount
	}
	return it
}

// textCells returns the cells that are not numbers.
func textCells(r row, nf numberFormat) []string {
	var out []string
	for _, c := range r.nonEmpty() {
		if _, ok := parseNumber(c.text, nf); !ok {
			out = append(out, c.text)
		}
	}
	return out
}

// readRow assigns the row's cells to the header's columns: one to one when
// the counts agree (the usual case, and immune to right-aligned numbers
// under left-aligned headings), otherwise by horizontal overlap.
func readRow(h *header, r row, nf numberFormat) fields {
	var f fields
	f.descStart = -1
	cells := r.nonEmpty()
	if r.grid && h.grid {
		cells = r.cells
	}
	assign := make([]int, len(cells))
	if r.grid && h.grid {
		for i, c := range cells {
			assign[i] = -1
			for j, col := range h.cols {
				if col.start == c.start {
					assign[i] = j
				}
			}
		}
	} else if len(cells) == len(h.cols) {
		for i := range cells {
			assign[i] = i
		}
	} else {
		for i, c := range cells {
			assign[i] = nearestColumn(h, c)
		}
	}
	for i, c := range cells {
		if c.text == "" || assign[i] < 0 {
			continue
		}
		v, isNum := parseNumber(c.text, nf)
		if isNum {
			f.numeric++
		} else {
			f.text++
		}
		switch h.cols[assign[i]].role {
		case roleDesc:
			if !isNum || len(f.desc) > 0 {
				f.desc = append(f.desc, c.text)
			}
		case roleQty:
			if q, ok := parseQuantity(c.text, nf); ok {
				f.qty, f.hasQty = q, true
			}
		case rolePrice:
			if isNum {
				f.price, f.hasPrice = v, true
			}
		case roleAmount:
			if isNum {
				f.amount, f.hasAmt = v, true
			}
		}
	}
	return f
}

func nearestColumn(h *header, c cell) int {
	best, bestScore := 0, -1<<30
	for i, col := range h.cols {
		overlap := min(c.end, col.end) - max(c.start, col.start)
		if overlap <= 0 {
			overlap = -min(abs(c.start-col.end), abs(col.start-c.end))
		}
		if overlap > bestScore {
			best, bestScore = i, overlap
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// continues reports whether a text-only row sits in the description column,
// which is what distinguishes a wrapped description from a footnote.
func continues(h *header, r row) bool {
	desc, ok := h.find(roleDesc)
	if !ok {
		return false
	}
	cells := r.nonEmpty()
	if len(cells) == 0 || r.grid != h.grid {
		// A paragraph after an HTML table is not in the table.
		return false
	}
	if r.grid {
		for _, c := range cells {
			if c.start != desc.start {
				return false
			}
		}
		return true
	}
	next := 1 << 30
	for _, c := range h.cols {
		if c.start > desc.start && c.start < next {
			next = c.start
		}
	}
	first := cells[0]
	return first.start >= desc.start-3 && first.start < next && len(cells) == 1
}

// labelsOnly reports a row of two or more short cells with letters and no
// numbers: what each line of a header looks like.
func labelsOnly(r row) bool {
	cells := r.nonEmpty()
	if len(cells) < 2 {
		return false
	}
	for _, c := range cells {
		if !hasLetter(c.text) || len([]rune(c.text)) > 30 || strings.ContainsAny(c.text, "0123456789") {
			return false
		}
	}
	return true
}

// mergeRows joins the two lines of a header column by column: grid cells
// by index, laid-out cells where they overlap (or nearly: right-aligned
// headings on two lines rarely start in the same column).
func mergeRows(a, b row) row {
	if a.grid != b.grid {
		return a
	}
	out := row{grid: a.grid}
	if a.grid {
		n := max(len(a.cells), len(b.cells))
		for i := range n {
			var parts []string
			if i < len(a.cells) {
				parts = append(parts, a.cells[i].text)
			}
			if i < len(b.cells) {
				parts = append(parts, b.cells[i].text)
			}
			out.cells = append(out.cells, cell{start: i, end: i + 1, text: collapseSpace(strings.Join(parts, " "))})
		}
		return out
	}
	out.cells = append(out.cells, a.nonEmpty()...)
	for _, c := range b.nonEmpty() {
		merged := false
		for i, o := range out.cells {
			if min(c.end, o.end)-max(c.start, o.start) > -2 {
				out.cells[i] = cell{start: min(c.start, o.start), end: max(c.end, o.end), text: o.text + " " + c.text}
				merged = true
				break
			}
		}
		if !merged {
			out.cells = append(out.cells, c)
		}
	}
	sort.Slice(out.cells, func(i, j int) bool { return out.cells[i].start < out.cells[j].start })
	return out
}
