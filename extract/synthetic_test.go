package extract

import (
	"context"
	"fmt"
	"html"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Synthetic invoices, generated rather than collected, show that the reader
// is general: every run draws header wordings, column orders, number
// locales, currencies, credit notes, wrapped descriptions and summary
// blocks at random, renders them as fixed-width text, CSV and HTML, and
// expects the drawn items back.

type synthItem struct {
	desc             []string // printed lines
	qty, price, amnt float64
}

type synthInvoice struct {
	cols     []role // column order
	heads    map[role]string
	comma    bool // 1.234,56
	currency string
	items    []synthItem
	credit   bool
}

var (
	synthHeads = map[role][]string{
		roleDesc:   {"Description", "Item", "Service", "Product", "Bezeichnung", "Désignation", "Particulars", "Item Description"},
		roleQty:    {"Qty", "Quantity", "Menge", "Hours", "Units", "Qté"},
		rolePrice:  {"Rate", "Price", "Unit Price", "Unit Cost", "Einzelpreis", "Prix unitaire", "Each"},
		roleAmount: {"Amount", "Total", "Line Total", "Betrag", "Montant", "Extended"},
	}
	synthWords = strings.Fields("oak desk chair cable adapter consulting hours licence annual support premium steel bolts hex walnut paint primer grey " +
		"delivery install calibration sensor module cleaning filter valve pump seal kit toner cartridge paper ream labour design review audit")
	synthSummary = []string{"Subtotal", "Sales tax 8%", "VAT 20%", "Discount", "Shipping", "Total due", "Amount due", "Balance"}
)

func newSynth(r *rand.Rand) synthInvoice {
	inv := synthInvoice{heads: map[role]string{}, comma: r.IntN(2) == 0, currency: []string{"USD", "EUR", "GBP"}[r.IntN(3)], credit: r.IntN(4) == 0}
	inv.cols = []role{roleDesc, roleQty, rolePrice, roleAmount}
	r.Shuffle(len(inv.cols), func(i, j int) { inv.cols[i], inv.cols[j] = inv.cols[j], inv.cols[i] })
	for ro, names := range synthHeads {
		inv.heads[ro] = names[r.IntN(len(names))]
	}
	for range 1 + r.IntN(7) {
		var it synthItem
		for range 1 + r.IntN(3) {
			var words []string
			for range 2 + r.IntN(3) {
				words = append(words, synthWords[r.IntN(len(synthWords))])
			}
			it.desc = append(it.desc, strings.Join(words, " "))
			if r.IntN(3) > 0 {
				break
			}
		}
		it.desc[0] = strings.ToUpper(it.desc[0][:1]) + it.desc[0][1:]
		it.qty = float64(1 + r.IntN(40))
		if r.IntN(4) == 0 {
			it.qty += 0.5
		}
		it.price = float64(r.IntN(300000)) / 100
		if inv.credit {
			it.price = -it.price
		}
		it.amnt = math.Round(it.qty*it.price*100) / 100
		inv.items = append(inv.items, it)
	}
	return inv
}

// money formats v in the invoice's locale with thousands separators.
func (inv synthInvoice) money(v float64) string {
	s := fmt.Sprintf("%.2f", math.Abs(v))
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString(map[bool]string{true: ".", false: ","}[inv.comma])
		}
		b.WriteRune(c)
	}
	out := b.String() + map[bool]string{true: ",", false: "."}[inv.comma] + frac
	if v < 0 {
		out = "-" + out
	}
	return out
}

func (inv synthInvoice) qty(v float64) string {
	s := fmt.Sprintf("%g", v)
	if inv.comma {
		s = strings.ReplaceAll(s, ".", ",")
	}
	return s
}

func (inv synthInvoice) cell(it synthItem, ro role, line int) string {
	if ro == roleDesc {
		if line < len(it.desc) {
			return it.desc[line]
		}
		return ""
	}
	if line > 0 {
		return ""
	}
	switch ro {
	case roleQty:
		return inv.qty(it.qty)
	case rolePrice:
		return inv.money(it.price)
	}
	return inv.money(it.amnt)
}

func (inv synthInvoice) total() float64 {
	t := 0.0
	for _, it := range inv.items {
		t += it.amnt
	}
	return t
}

// text renders fixed-width text: columns padded to their widest cell.
func (inv synthInvoice) text(r *rand.Rand) string {
	width := map[role]int{}
	for _, ro := range inv.cols {
		width[ro] = len([]rune(inv.heads[ro]))
		for _, it := range inv.items {
			for l := range it.desc {
				width[ro] = max(width[ro], len([]rune(inv.cell(it, ro, l))))
			}
		}
	}
	line := func(cell func(ro role) string) string {
		var b strings.Builder
		for i, ro := range inv.cols {
			c := cell(ro)
			pad := strings.Repeat(" ", width[ro]-len([]rune(c)))
			if ro == roleDesc {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
			if i < len(inv.cols)-1 {
				b.WriteString("    ")
			}
		}
		return strings.TrimRight(b.String(), " ") + "\n"
	}
	var b strings.Builder
	title := map[bool]string{true: "CREDIT NOTE", false: "INVOICE"}[inv.credit]
	fmt.Fprintf(&b, "Northwind Trading Ltd\n%s No. %d\nDate: 2024-03-%02d\nCurrency: %s\n\n", title, 1000+r.IntN(9000), 1+r.IntN(28), inv.currency)
	b.WriteString(line(func(ro role) string { return inv.heads[ro] }))
	for _, it := range inv.items {
		for l := range it.desc {
			b.WriteString(line(func(ro role) string { return inv.cell(it, ro, l) }))
		}
	}
	b.WriteString("\n")
	for _, s := range synthSummary[:2+r.IntN(4)] {
		fmt.Fprintf(&b, "%50s  %12s\n", s, inv.money(inv.total()))
	}
	b.WriteString("\nPayment within 30 days. Thank you for your business.\n")
	return b.String()
}

// csv renders a semicolon CSV for comma locales, a comma CSV otherwise.
func (inv synthInvoice) csv() string {
	sep := map[bool]string{true: ";", false: ","}[inv.comma]
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	var b strings.Builder
	var head []string
	for _, ro := range inv.cols {
		head = append(head, q(inv.heads[ro]))
	}
	b.WriteString(strings.Join(head, sep) + "\n")
	for _, it := range inv.items {
		var f []string
		for _, ro := range inv.cols {
			if ro == roleDesc {
				f = append(f, q(strings.Join(it.desc, "\n")))
			} else {
				f = append(f, q(inv.cell(it, ro, 0)))
			}
		}
		b.WriteString(strings.Join(f, sep) + "\n")
	}
	return b.String()
}

func (inv synthInvoice) html() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html><html><head><style>td{padding:4px}</style></head><body><h1>Invoice</h1><p>Amounts in %s</p><table><thead><tr>", inv.currency)
	for _, ro := range inv.cols {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(inv.heads[ro]))
	}
	b.WriteString("</tr></thead><tbody>")
	for _, it := range inv.items {
		b.WriteString("<tr>")
		for _, ro := range inv.cols {
			if ro == roleDesc {
				var lines []string
				for _, l := range it.desc {
					lines = append(lines, html.EscapeString(l))
				}
				fmt.Fprintf(&b, "<td>%s</td>", strings.Join(lines, "<br>"))
				continue
			}
			fmt.Fprintf(&b, "<td>%s</td>", inv.cell(it, ro, 0))
		}
		b.WriteString("</tr>")
	}
	fmt.Fprintf(&b, "</tbody><tfoot><tr><td colspan=\"%d\">Total</td><td>%s</td></tr></tfoot></table></body></html>", len(inv.cols)-1, inv.money(inv.total()))
	return b.String()
}

func (inv synthInvoice) want() []Item {
	var out []Item
	for _, it := range inv.items {
		out = append(out, Item{Description: strings.Join(it.desc, " "), Quantity: it.qty, UnitPrice: it.price, Amount: it.amnt})
	}
	return out
}

func checkSynth(t *testing.T, label, doc string, inv synthInvoice, wantCurrency bool) {
	t.Helper()
	d, err := Preprocess(context.Background(), []byte(doc), "invoice."+label[strings.LastIndex(label, " ")+1:])
	if err != nil {
		t.Errorf("%s: %v\n%s", label, err, doc)
		return
	}
	got, err := Extract(context.Background(), d)
	if err != nil {
		t.Errorf("%s: %v", label, err)
		return
	}
	want := inv.want()
	ok := len(got.Items) == len(want)
	for i := 0; ok && i < len(want); i++ {
		g, w := got.Items[i], want[i]
		ok = g.Description == w.Description && round2(g.Amount) == w.Amount && g.Quantity == w.Quantity && round2(g.UnitPrice) == w.UnitPrice
	}
	if !ok {
		t.Errorf("%s: got %+v\nwant %+v\nfrom\n%s", label, got.Items, want, doc)
	}
	if wantCurrency && got.Currency != inv.currency {
		t.Errorf("%s: currency %q, want %s", label, got.Currency, inv.currency)
	}
}

func TestSyntheticInvoices(t *testing.T) {
	t.Parallel()
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		inv := newSynth(r)
		checkSynth(t, fmt.Sprintf("seed %d text", seed), inv.text(r), inv, true)
		checkSynth(t, fmt.Sprintf("seed %d csv", seed), inv.csv(), inv, false)
		checkSynth(t, fmt.Sprintf("seed %d html", seed), inv.html(), inv, true)
		if t.Failed() {
			return // one seed's report is enough to work on
		}
	}
}
