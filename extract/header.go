package extract

import "strings"

type role int

const (
	roleNone   role = iota // unrecognised heading
	roleDesc               // what was sold
	roleQty                // how many
	rolePrice              // price of one
	roleAmount             // line total
	roleSKU                // item numbers, positions: never part of the description
	roleOther              // unit, period, date, tax rate: known but unused
)

type column struct {
	role       role
	start, end int
	label      string
}

type header struct {
	cols []column
	grid bool
}

func (h *header) find(ro role) (column, bool) {
	for _, c := range h.cols {
		if c.role == ro {
			return c, true
		}
	}
	return column{}, false
}

// Guarded because most cells hold none of the literals, and classify, trying
// each regexp on each cell, took a tenth of docket bench's CPU.
var (
	reHeadNoise = mustGuarded(`\([^)]*\)|[$€£¥¬:]|\b(?:usd|eur|gbp|chf|excl|incl|net|netto|brutto)\b\.?`,
		"(", "$", "€", "£", "¥", "¬", ":", "usd", "eur", "gbp", "chf", "excl", "incl", "net", "brutto")
	reSKU = mustGuarded(`#|\b(?:sku|code|no|nr|nº|number|pos|position|ref|art)\b\.?|nummer|artikel-?nr|part\b`,
		"#", "sku", "code", "no", "nr", "nº", "number", "pos", "ref", "art", "nummer")
	reAmount = mustGuarded(`total|amount|betrag|gesamt|montant|summe|\bsum\b|\bextended\b|\bline value\b|\bvalue\b`,
		"total", "amount", "betrag", "gesamt", "montant", "sum", "extended", "value")
	rePrice = mustGuarded(`price|\brate\b|cost|preis|\bprix\b|\bp\.?u\.?\b|\beach\b|\bunit value\b|tarif`,
		"price", "rate", "cost", "preis", "prix", "pu", "p.u", "each", "value", "tarif")
	reQty = mustGuarded(`^(?:qty|qté|quantity|quantité|quantities|menge|anzahl|hours|hrs|units|pcs|stück|stk|nb|cantidad|qty\.?)$|^qty\b|^quantity\b`,
		"qty", "qté", "quantit", "menge", "anzahl", "hours", "hrs", "units", "pcs", "stück", "stk", "nb", "cantidad")
	reDesc = mustGuarded(`description|^items?$|^item name$|^services?$|^products?$|^articles?$|bezeichnung|beschreibung|^leistung|^artikel$|d[ée]signation|libell[ée]|^details?$|particulars|^descripción$|^concepto$`,
		"description", "item", "service", "product", "article", "bezeichnung", "beschreibung", "leistung", "artikel", "signation", "libell", "detail", "particulars", "descripción", "concepto")
	reOther = mustGuarded(`^(?:unit|units of measure|uom|einheit|unité|period|date|datum|tax|vat|mwst|ust|tva|disc\.?|discount|%)`,
		"unit", "uom", "einheit", "period", "date", "datum", "tax", "vat", "mwst", "ust", "tva", "disc", "%")
)

// classify maps a column heading to its role. The order matters: "Item #"
// is an item number before it is an item, "Unit Price" a price before it
// is a unit, and "Line Total" an amount before anything else.
func classify(label string) role {
	s := strings.ToLower(collapseSpace(label))
	s = strings.TrimSpace(reHeadNoise.ReplaceAllString(s, " "))
	s = collapseSpace(s)
	switch {
	case s == "":
		return roleNone
	case reSKU.MatchString(s) && !reDesc.MatchString(s) || s == "item #":
		return roleSKU
	case reQty.MatchString(s):
		return roleQty
	case rePrice.MatchString(s) && !strings.Contains(s, "total"):
		return rolePrice
	case reAmount.MatchString(s):
		return roleAmount
	case reOther.MatchString(s):
		return roleOther
	case reDesc.MatchString(s):
		return roleDesc
	}
	return roleNone
}

// parseHeader recognises the heading row of an item table: a description
// and an amount, usually a quantity or a price too, and nothing that looks
// like a value.
func parseHeader(r row) (*header, bool) {
	cells := r.nonEmpty()
	if len(cells) < 2 || len(cells) > 12 {
		return nil, false
	}
	h := &header{grid: r.grid}
	seen := map[role]int{}
	unknown := 0
	for _, c := range cells {
		if !hasLetter(c.text) || len([]rune(c.text)) > 40 {
			return nil, false
		}
		ro := classify(c.text)
		if ro == roleNone {
			unknown++
		}
		seen[ro]++
		h.cols = append(h.cols, column{role: ro, start: c.start, end: c.end, label: c.text})
	}
	if seen[roleDesc] > 1 {
		// "Item | Description": the item column holds codes.
		for i, c := range h.cols {
			if c.role == roleDesc && !strings.Contains(strings.ToLower(c.label), "descr") {
				h.cols[i].role = roleSKU
				break
			}
		}
	}
	if seen[roleDesc] == 0 || seen[roleAmount] == 0 {
		return nil, false
	}
	// Without a quantity or price column ("Description  Amount", common
	// for services) every heading must be known, or a line of prose with
	// two such words would start a table.
	if seen[roleQty]+seen[rolePrice] == 0 && (unknown > 0 || len(cells) > 3) {
		return nil, false
	}
	if unknown > 1 || seen[roleAmount] > 2 {
		return nil, false
	}
	if seen[roleAmount] == 2 {
		// Two amount-like headings ("Net", "Total"): the last is the line total.
		first := true
		for i := len(h.cols) - 1; i >= 0; i-- {
			if h.cols[i].role == roleAmount {
				if !first {
					h.cols[i].role = roleOther
				}
				first = false
			}
		}
	}
	return h, true
}
