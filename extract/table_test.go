package extract

import (
	"context"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := map[string]role{
		"Description": roleDesc, "Item": roleDesc, "Service": roleDesc, "Bezeichnung": roleDesc,
		"Qty": roleQty, "Quantity": roleQty, "Menge": roleQty,
		"Rate": rolePrice, "Price": rolePrice, "Unit Cost (£)": rolePrice, "Unit Price": rolePrice,
		"Einzelpreis (EUR)": rolePrice, "Price EUR": rolePrice,
		"Amount": roleAmount, "Total": roleAmount, "Line Total (£)": roleAmount, "Betrag (EUR)": roleAmount,
		"Gesamt €": roleAmount, "Total EUR": roleAmount,
		"Item #": roleSKU, "Artikelnummer": roleSKU, "Pos.": roleSKU, "SKU": roleSKU,
		"Einheit": roleOther, "Period": roleOther, "Unit": roleOther,
		"Colour": roleNone,
	}
	for in, want := range tests {
		if got := classify(in); got != want {
			t.Errorf("classify(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		line  string
		roles []role // nil: not a header
	}{
		{"Description          Qty   Unit Price    Amount", []role{roleDesc, roleQty, rolePrice, roleAmount}},
		{"  Qty  Description          Price EUR     Total EUR", []role{roleQty, roleDesc, rolePrice, roleAmount}},
		{"Item          Rate     Qty     Total", []role{roleDesc, rolePrice, roleQty, roleAmount}},
		{"Item #   Description    Qty   Rate   Amount", []role{roleSKU, roleDesc, roleQty, rolePrice, roleAmount}},
		{"Item  Description  Qty  Amount", []role{roleSKU, roleDesc, roleQty, roleAmount}},
		{"Service\tPeriod\tQty\tPrice\tTotal", []role{roleDesc, roleOther, roleQty, rolePrice, roleAmount}},
		{"Description   Amount", []role{roleDesc, roleAmount}}, // services: no quantity, no price
		{"Notes   Total", nil},                   // nothing describes the item
		{"Description   Remarks   Amount", nil},  // unknown column and no quantity or price
		{"Qty   Unit Price   Amount", nil},       // nothing describes the item
		{"Description   12   4.00   48.00", nil}, // a data row
		{"Thank you for your business, total due within 30 days.", nil},
	}
	for _, tc := range tests {
		h, ok := parseHeader(textRows(tc.line)[0])
		if tc.roles == nil {
			if ok {
				t.Errorf("%q: detected as header %+v", tc.line, h.cols)
			}
			continue
		}
		if !ok {
			t.Errorf("%q: not detected as header", tc.line)
			continue
		}
		var got []role
		for _, c := range h.cols {
			got = append(got, c.role)
		}
		if len(got) != len(tc.roles) {
			t.Errorf("%q: roles %v, want %v", tc.line, got, tc.roles)
			continue
		}
		for i := range got {
			if got[i] != tc.roles[i] {
				t.Errorf("%q: roles %v, want %v", tc.line, got, tc.roles)
				break
			}
		}
	}
}

func TestSummaryRowsAreNotItems(t *testing.T) {
	const body = `Description                   Qty   Unit Price     Amount
Widget                          2        10.00      20.00
Oil change                      1        45.00      45.00
Subtotal                                           65.00
Discount (10%)                                     -6.50
Shipping & Handling                                 5.00
Sales tax (7%)                                      4.10
VAT 20%                                            13.00
Total due                                          80.60
Deposit received                                  -20.00
Balance due                                        60.60
Payment by card                                    60.60
Subtotal carried forward                           65.00
`
	items := extractText(t, ctPlain, body)
	if len(items) != 2 {
		t.Fatalf("got %d items, want 2: %+v", len(items), items)
	}
	// A real item keeps its place even when its name contains a summary word,
	// because its numbers agree.
	if items[1].Description != "Oil change" {
		t.Errorf("second item %+v", items[1])
	}
	for _, label := range []string{"Subtotal", "Tax", "VAT 19 %", "Zwischensumme", "MwSt. 19 %", "Gesamtbetrag",
		"Less deposit received", "Balance due", "Subtotal brought forward", "Promotional credit", "CHANGE", "Total (USD)"} {
		if !reSummary.MatchString(label) {
			t.Errorf("%q is not recognised as a summary label", label)
		}
	}
	for _, label := range []string{"Drone footage add-on", "Logo design", "Wheelbarrow 6 cu ft, steel tray"} {
		if reSummary.MatchString(label) {
			t.Errorf("%q is wrongly taken for a summary label", label)
		}
	}
}

func TestTextFeatures(t *testing.T) {
	const body = `Qty  Item                          Rate        Line Total
 -2  Returned headset                79,00       -158,00
  3  Cable, braided                   1.250,50   3.751,50
     (2 m, black)

Notes: 4 items, 12.00 each would be wrong
`
	items := extractText(t, ctPlain, body)
	want := []Item{
		{"Returned headset", -2, 79, -158},
		{"Cable, braided (2 m, black)", 3, 1250.5, 3751.5},
	}
	if len(items) != len(want) {
		t.Fatalf("got %+v, want %+v", items, want)
	}
	for i := range want {
		if items[i] != want[i] {
			t.Errorf("item %d = %+v, want %+v", i, items[i], want[i])
		}
	}
}

func TestCSVSemicolonDecimalComma(t *testing.T) {
	const body = "Rechnung;R-1;;\n;;;\nBezeichnung;Menge;Einzelpreis;Betrag\n" +
		"\"Stuhl, grau\";4;289,00;1.156,00\n\"Montage\nvor Ort\";3,5;58,00;203,00\n;;Zwischensumme;1.359,00\n"
	doc, err := Preprocess(context.Background(), []byte(body), "upload.bin")
	if err != nil || doc.ContentType != ctCSV {
		t.Fatalf("Preprocess: %v, %+v", err, doc)
	}
	inv, err := Extract(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{{"Stuhl, grau", 4, 289, 1156}, {"Montage vor Ort", 3.5, 58, 203}}
	if len(inv.Items) != 2 || inv.Items[0] != want[0] || inv.Items[1] != want[1] {
		t.Errorf("items %+v, want %+v", inv.Items, want)
	}
}

func TestNonInvoiceHasNoItems(t *testing.T) {
	const letter = `Dear Ms. Ortiz,

Our records show that invoice RL-4471 for $12,480.00 and invoice RL-4502 for
$3,915.50 remain open. Total due within 30 days.

Sincerely,
Daniel`
	doc, err := Preprocess(context.Background(), []byte(letter), "letter.txt")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Extract(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Items == nil || len(inv.Items) != 0 || inv.Currency != "" {
		t.Errorf("got %+v, want no items and no currency", inv)
	}
}

func TestHTMLTable(t *testing.T) {
	const page = `<!DOCTYPE html><html><head><title>x</title><style>td{}</style></head><body>
<p>Invoice &amp; receipt</p><table>
<tr><th>Service</th><th>Qty</th><th>Price</th><th>Total</th></tr>
<tr><td>Server<br><small>64 GB</small></td><td>2</td><td>&euro;189,00</td><td>&euro;378,00</td></tr>
<tfoot><tr><td colspan="2"></td><td>Subtotal</td><td>&euro;378,00</td></tr></tfoot>
</table></body></html>`
	doc, err := Preprocess(context.Background(), []byte(page), "a.txt")
	if err != nil || doc.ContentType != ctHTML {
		t.Fatalf("Preprocess: %v %+v", err, doc)
	}
	inv, err := Extract(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Items) != 1 || inv.Items[0] != (Item{"Server 64 GB", 2, 189, 378}) || inv.Currency != "EUR" {
		t.Errorf("got %+v", inv)
	}
}

func extractText(t *testing.T, ct, body string) []Item {
	t.Helper()
	inv, err := Extract(context.Background(), &Document{ContentType: ct, Pages: 1, Text: body})
	if err != nil {
		t.Fatal(err)
	}
	return inv.Items
}
