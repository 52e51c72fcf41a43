package extract

import (
	"regexp"
	"strings"
)

var (
	// reTimes matches the "2 x £3.40" line a till prints under an item
	// bought more than once.
	reTimes = regexp.MustCompile(`^(-?\d+(?:[.,]\d+)?)\s*[x×@]\s*(.+)$`)
	reMoney = regexp.MustCompile(`\d[.,]\d{2}\s*(?:[$€£]|[A-Z]{3})?$`)
)

// findReceiptItems reads till receipts, which have no table header: an item
// is a name and a price on one line, optionally followed by a quantity line
// and indented description lines. It runs only when no item table was
// found, and wants two such items before it believes the document is a
// receipt, since prose rarely puts two prices at the right margin.
func findReceiptItems(rows []row, nf numberFormat) []Item {
	var items []Item
	var itemStart int
	canExtend := false
	for _, r := range rows {
		cells := r.nonEmpty()
		if r.blank || r.grid || len(cells) == 0 {
			canExtend = false
			continue
		}
		if len(cells) == 2 && hasLetter(cells[0].text) && reMoney.MatchString(cells[1].text) {
			amt, ok := parseNumber(cells[1].text, nf)
			if ok && !reSummary.MatchString(cells[0].text) {
				items = append(items, Item{Description: cells[0].text, Quantity: 1, UnitPrice: amt, Amount: amt})
				itemStart, canExtend = cells[0].start, true
				continue
			}
		}
		if canExtend && len(cells) == 1 {
			last := &items[len(items)-1]
			if m := reTimes.FindStringSubmatch(cells[0].text); m != nil {
				q, ok1 := parseNumber(m[1], nf)
				p, ok2 := parseNumber(m[2], nf)
				if ok1 && ok2 && consistent(q, p, last.Amount) {
					last.Quantity, last.UnitPrice = q, p
					continue
				}
			}
			if cells[0].start > itemStart && !reSummary.MatchString(cells[0].text) {
				last.Description = strings.TrimSpace(last.Description + " " + cells[0].text)
				continue
			}
		}
		canExtend = false
	}
	if len(items) < 2 {
		return nil
	}
	return items
}
