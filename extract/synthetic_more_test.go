package extract

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/docket/docket/extract/fixture"
)

// Hand-written documents for the layouts the generator in
// synthetic_test.go does not draw: PDFs, scans, two-column tables, centred
// descriptions and two-line headers.

// pdfTable draws rows of cells at the given x positions, 14 pt apart from
// y downwards, right-aligning the cells whose x is negative (numbers).
func pdfTable(y int, xs []int, rows ...[]string) string {
	var b strings.Builder
	for i, r := range rows {
		for j, c := range r {
			if c == "" {
				continue
			}
			x := xs[j]
			if x < 0 {
				x = -x - 5*len(c) // roughly right-aligned in 10 pt Helvetica
			}
			b.WriteString(fixture.TextOp(x, y-14*i, c))
		}
	}
	return b.String()
}

// A table that runs over three pages, its header repeated and with
// carried-forward lines, a credit line and a wrapped description.
func TestSyntheticMultipagePDF(t *testing.T) {
	t.Parallel()
	xs := []int{50, -330, -420, -540}
	head := []string{"Item", "Qty", "Unit Cost", "Line Total"}
	p1 := fixture.TextOp(50, 760, "INVOICE 2024-77   Currency: EUR") + pdfTable(700, xs, head,
		[]string{"Steel brackets 40 mm", "120", "1,10", "132,00"},
		[]string{"Anchor bolts M10,", "300", "0,45", "135,00"},
		[]string{"galvanised, box of 50", "", "", ""}) +
		pdfTable(600, xs, []string{"Carried forward", "", "", "267,00"})
	p2 := pdfTable(740, xs, []string{"Brought forward", "", "", "267,00"}) + pdfTable(710, xs, head,
		[]string{"Site survey (hours)", "6,5", "85,00", "552,50"},
		[]string{"Returned brackets", "-10", "1,10", "-11,00"})
	p3 := pdfTable(740, xs, head, []string{"Welding rods 2,5 mm", "4", "1.234,50", "4.938,00"}) +
		pdfTable(680, xs, []string{"", "", "Subtotal", "5.746,50"}, []string{"", "", "MwSt 19 %", "1.091,84"}, []string{"", "", "Total EUR", "6.838,34"})
	doc, err := Preprocess(context.Background(), fixture.PDF(p1, p2, p3), "scan.bin", Poppler(""))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Extract(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{
		{"Steel brackets 40 mm", 120, 1.1, 132}, {"Anchor bolts M10, galvanised, box of 50", 300, 0.45, 135},
		{"Site survey (hours)", 6.5, 85, 552.5}, {"Returned brackets", -10, 1.1, -11}, {"Welding rods 2,5 mm", 4, 1234.5, 4938},
	}
	if doc.Pages != 3 || inv.Currency != "EUR" || fmt.Sprint(inv.Items) != fmt.Sprint(want) {
		t.Errorf("pages %d, currency %q, items\n%+v\nwant\n%+v\nfrom\n%s", doc.Pages, inv.Currency, inv.Items, want, doc.Text)
	}
}

// Documents with numbers that are not invoices succeed with no items and
// no currency.
func TestSyntheticNonInvoices(t *testing.T) {
	t.Parallel()
	docs := map[string]string{
		"letter.txt": "Dear Ms Patel,\n\nFurther to our call on 12.03.2024, our payment terms remain 30 days net.\n" +
			"Your last three invoices totalled $12,480.00 and were paid on time.\nOrder 4411   2   $1,200.00\n\nKind regards,\nR. Hale\n",
		"minutes.html": "<html><body><h1>Minutes</h1><table><tr><th>Topic</th><th>Owner</th><th>Due</th></tr><tr><td>Budget 2025</td><td>Ana</td><td>2024-05-01</td></tr></table></body></html>",
		"stock.csv":    "Warehouse,Aisle,Shelf,Count\nNorth,4,12,300\nSouth,2,7,45\n",
	}
	for name, text := range docs {
		doc, err := Preprocess(context.Background(), []byte(text), name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		inv, err := Extract(context.Background(), doc)
		if err != nil || len(inv.Items) != 0 || inv.Currency != "" {
			t.Errorf("%s: %+v, %v; want no items and no currency", name, inv, err)
		}
	}
}

// A generated invoice, rasterised at 200 dpi (a fax-quality scan) and read
// back by OCR: the OCR path is not tuned to the corpus scans either.
func TestSyntheticScan(t *testing.T) {
	t.Parallel()
	xs := []int{60, -360, -450, -560}
	page := fixture.TextOp(60, 740, "INVOICE 8812 - amounts in GBP") + pdfTable(680, xs,
		[]string{"Description", "Qty", "Price", "Amount"},
		[]string{"Printer paper A4", "12", "4.25", "51.00"},
		[]string{"Toner cartridge black", "2", "64.90", "129.80"},
		[]string{"Desk lamp", "1", "23.50", "23.50"}) +
		pdfTable(600, xs, []string{"", "", "Total", "204.30"})
	png := encodePNG(t, renderPage(t, page, 200))
	doc, err := Preprocess(context.Background(), png, "upload")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Extract(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{{"Printer paper A4", 12, 4.25, 51}, {"Toner cartridge black", 2, 64.9, 129.8}, {"Desk lamp", 1, 23.5, 23.5}}
	if doc.ContentType != ctPNG || doc.Pages != 1 || inv.Currency != "GBP" || fmt.Sprint(inv.Items) != fmt.Sprint(want) {
		t.Errorf("%s %d %q %+v from\n%s", doc.ContentType, doc.Pages, inv.Currency, inv.Items, doc.Text)
	}
}

// A services invoice with only a description and an amount column.
func TestTwoColumnInvoice(t *testing.T) {
	t.Parallel()
	text := "Brightline Consulting LLC\nInvoice 2291\n\nDescription                                   Amount\n" +
		"Strategy workshop, 2 days                 $4,800.00\nFollow-up report and                      $1,250.00\nrecommendations\n\n" +
		"                                Subtotal  $6,050.00\n                                Total     $6,050.00\n"
	expectItems(t, "inv.txt", text, "USD", []Item{{"Strategy workshop, 2 days", 1, 4800, 4800}, {"Follow-up report and recommendations", 1, 1250, 1250}})
}

// Descriptions centred against their numbers (HTML's default for table
// cells) start a line above the numbers; section headings above an item
// are not part of it.
func TestCentredDescriptionsAndHeadings(t *testing.T) {
	t.Parallel()
	text := "INVOICE 7781                                   Currency: GBP\n\n" +
		"Description                              Qty      Price      Amount\n\n" +
		"Materials\n" +
		"Oak worktop, 3 m, oiled                    2     189.00      378.00\n\n" +
		"Kitchen fitting, two fitters,\n" +
		"incl. removal of old                       1     640.00      640.00\n" +
		"units and disposal\n\n" +
		"Labour\n" +
		"Tiling splashback                          4      35.00      140.00\n\n" +
		"                                          Subtotal          1,158.00\n"
	expectItems(t, "inv.txt", text, "GBP", []Item{{"Oak worktop, 3 m, oiled", 2, 189, 378},
		{"Kitchen fitting, two fitters, incl. removal of old units and disposal", 1, 640, 640},
		{"Tiling splashback", 4, 35, 140}})
}

// Headings printed over two lines, as narrow columns force them to be.
func TestTwoLineHeader(t *testing.T) {
	t.Parallel()
	text := "INVOICE 5120                 EUR\n\n" +
		"Item                          Qty      Unit        Line\n" +
		"                                       Price       Total\n" +
		"Copper pipe 15 mm, 3 m          8     12,40       99,20\n" +
		"Pipe clips                     40      0,35       14,00\n\n" +
		"                                       Total      113,20\n"
	html := "<html><body><table><tr><th>Item</th><th>Qty</th><th>Unit</th><th>Line</th></tr><tr><th></th><th></th><th>Price</th><th>Total</th></tr>" +
		"<tr><td>Copper pipe 15 mm, 3 m</td><td>8</td><td>12,40</td><td>99,20</td></tr><tr><td>Pipe clips</td><td>40</td><td>0,35</td><td>14,00</td></tr></table><p>EUR</p></body></html>"
	want := []Item{{"Copper pipe 15 mm, 3 m", 8, 12.4, 99.2}, {"Pipe clips", 40, 0.35, 14}}
	expectItems(t, "inv.txt", text, "EUR", want)
	expectItems(t, "inv.html", html, "EUR", want)
}

// expectItems processes data as the file name and checks the items and
// currency exactly.
func expectItems(t *testing.T, name, data, currency string, want []Item) {
	t.Helper()
	doc, inv, err := Process(context.Background(), []byte(data), name, nil)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if fmt.Sprint(inv.Items) != fmt.Sprint(want) || inv.Currency != currency {
		t.Errorf("%s: currency %q, items %+v\nwant %s %+v\nfrom\n%s", name, inv.Currency, inv.Items, currency, want, doc.Text)
	}
}
