package extract

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/docket/docket/extract/fixture"
)

// The fuzz targets drive the Go parsers only: external programs are
// switched off (Tesseract(""), Poppler("")), so that a target runs
// thousands of inputs a second and finds our bugs rather than the tools'.
// Each checks the package's promise: every failure is an *Error with a
// known code, never a panic, and results are well-formed.

var knownCodes = map[string]bool{
	CodeUnsupportedFormat: true, CodeCorruptDocument: true, CodeEmptyDocument: true, CodeOCRUnavailable: true,
	CodeTooManyPages: true, CodeTimeout: true, CodeInternal: true,
}

// pipeline runs Preprocess and Extract offline and checks the outcome.
// Our own parsers run unguarded, so that a panic in them fails the target;
// the PDF target goes through the guard, because the PDF library panics on
// malformed content streams by design and the guard's internal_error is
// the documented outcome for that.
func pipeline(t *testing.T, data []byte, name string, guard bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := []Option{Tesseract(""), Poppler(""), MaxPages(50)}
	var (
		doc *Document
		inv *Invoice
		err error
	)
	if guard {
		doc, inv, err = Process(ctx, data, name, nil, opts...)
	} else if doc, err = preprocess(ctx, data, name, newConfig(opts)); err == nil {
		inv, err = extract(ctx, doc)
	}
	if err != nil {
		if !knownCodes[Code(err)] {
			t.Fatalf("unknown code %q: %v", Code(err), err)
		}
		return
	}
	if doc.Pages < 1 || doc.Pages > 50 {
		t.Fatalf("pages %d", doc.Pages)
	}
	for _, it := range inv.Items {
		if math.IsNaN(it.Amount) || math.IsInf(it.Amount, 0) || it.Description == "" {
			t.Fatalf("bad item %+v", it)
		}
	}
}

func FuzzDetect(f *testing.F) {
	for _, s := range []string{"%PDF-1.7", "\x89PNG\r\n\x1a\n", "\xFF\xD8\xFF", "II*\x00", "<html><table>", "a,b\n1,2\n3,4\n", "plain", "\x00\x01"} {
		f.Add([]byte(s), "f.csv")
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		ct, err := detect(data, name)
		if err == nil && ct == "" {
			t.Fatal("no type and no error")
		}
		if err != nil && Code(err) != CodeUnsupportedFormat {
			t.Fatalf("detect error %v", err)
		}
	})
}

func FuzzText(f *testing.F) {
	f.Add([]byte("Description   Qty   Unit Price   Amount\nWidget        2     1.234,50     2.469,00\n  blue\nTotal  2.469,00 EUR\n"))
	f.Add([]byte("Item  Rate  Hours  Line Total\nConsulting  95.00  -2  -190.00\n"))
	f.Add([]byte("Dear Sir,\nplease find our terms.\n"))
	f.Fuzz(func(t *testing.T, data []byte) { pipeline(t, data, "in.txt", false) })
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte("Bezeichnung;Menge;Preis;Betrag\n\"Stuhl,\nschwarz\";4;289,00;1.156,00\n;;Summe;1.156,00\n"))
	f.Add([]byte("Item,Qty,Price,Total\nPaper,3,4.00,12.00\n\"unterminated,1,2,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) { pipeline(t, data, "in.csv", false) })
}

func FuzzHTML(f *testing.F) {
	f.Add([]byte(`<html><body><table><tr><th>Description</th><th>Qty</th><th>Price</th><th>Amount</th></tr><tr><td>A<br>b</td><td>1</td><td>$5.00</td><td>$5.00</td></tr><tr><td colspan="3">Total</td><td>$5.00</td></tr></table></body></html>`))
	f.Add([]byte(`<html><table><tr><td colspan=99999>x</td><script>alert(1)</script>`))
	f.Fuzz(func(t *testing.T, data []byte) { pipeline(t, data, "in.html", false) })
}

func FuzzPDF(f *testing.F) {
	page := fixture.TextOp(50, 700, "Description") + fixture.TextOp(300, 700, "Qty") + fixture.TextOp(360, 700, "Price") + fixture.TextOp(450, 700, "Amount") +
		fixture.TextOp(50, 680, "Hex bolts") + fixture.TextOp(305, 680, "4") + fixture.TextOp(360, 680, "18.40") + fixture.TextOp(450, 680, "73.60")
	f.Add(fixture.PDF(page))
	f.Add(fixture.PDF(page, "BT /F1 12 Tf 1 0 0 1 50 50 Tm [(Wor) -250 (ld)] TJ ET"))
	f.Add(fixture.PDF("1 begin"))
	f.Add(fixture.PDF(page)[:300])
	f.Fuzz(func(t *testing.T, data []byte) { pipeline(t, data, "in.pdf", true) })
}

func FuzzNumbers(f *testing.F) {
	for _, s := range []string{"1.234,56", "1,234.56", "-12.50", "(12.50)", "12.50-", "€ 1.809,60", "$1,303.50", "6,5", "1'234.50", "1 234,50", "1e308", "--1"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, comma bool) {
		nf := numberFormat{decimalComma: comma}
		if v, ok := parseNumber(s, nf); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("parseNumber(%q) = %v", s, v)
		}
		if v, ok := parseQuantity(s, nf); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("parseQuantity(%q) = %v", s, v)
		}
	})
}

// FuzzOCRText feeds Tesseract's TSV format to the word parser and the
// row builder that turn OCR into the layout text.
func FuzzOCRText(f *testing.F) {
	f.Add([]byte("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" +
		"5\t1\t1\t1\t1\t1\t100\t100\t200\t40\t96.5\tDescription\n5\t1\t1\t1\t1\t2\t900\t104\t60\t40\t95\tQty\n" +
		"5\t1\t1\t1\t2\t1\t100\t160\t220\t40\t91\tWidget\n5\t1\t1\t1\t2\t2\t905\t165\t20\t38\t90\t2\n"))
	f.Add([]byte("5\t1\t1\t1\t1\t1\t-5\t0\t1\t99999999\t-1\t|\n"))
	// Words left of the page: CI's fuzzer found this panicking in layout.
	f.Add([]byte("5\t1\t1\t1\t1\t1\t-900\t10\t50\t40\t90\tleft\n5\t1\t1\t1\t1\t2\t-400\t12\t50\t40\t90\tof\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ws := range parseTesseractTSV(data) {
			_ = layoutPage(wordsToRuns(ws, ocrScale))
		}
	})
}

func FuzzPopplerWords(f *testing.F) {
	f.Add(`<doc><page width="612" height="792"><flow><block><line><word xMin="53.8" yMin="54.5" xMax="93.3" yMax="67.9">Acme &amp; Co</word></line></block></flow></page></doc>`)
	f.Add(`<page><line><word xMin="1e308" yMin="-1e308" xMax="NaN" yMax="5">x</word>`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, ws := range parseBBoxLayout(s) {
			_ = layoutPage(wordsToRuns(ws, popplerScale))
		}
	})
}

func FuzzImageHeaders(f *testing.F) {
	f.Add([]byte("II*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x01\x01\x00\x00\x03\x00\x00\x00\x01\x00\x10\x00\x00\x00\x00\x00\x08"))
	f.Add([]byte("P5\n2 2\n255\n\x00\x01\x02\x03"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if n, ok := tiffPages(data); ok && n < 1 {
			t.Fatalf("tiffPages ok with %d pages", n)
		}
		if g, err := readPGM(data); err == nil {
			removeRules(g, 4)
		}
		_, _ = imagePages(ctPNG, data)
		_, _ = imagePages(ctJPEG, data)
	})
}

func FuzzRemoteResponse(f *testing.F) {
	f.Add([]byte(`{"currency":"EUR","line_items":[{"description":"a","quantity":1,"unit_price":2,"amount":2}]}`))
	f.Add([]byte(`{"error":{"code":"corrupt_document","message":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := parseRemote(data); err != nil && !knownCodes[Code(err)] {
			t.Fatalf("unknown code: %v", err)
		}
		if err := remoteFailure(data); !knownCodes[Code(err)] {
			t.Fatalf("unknown code: %v", err)
		}
	})
}
