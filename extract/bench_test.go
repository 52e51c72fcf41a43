package extract

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Benchmarks of whole documents, Preprocess plus Extract, as the worker
// runs them; the README and BENCHMARKS.md figures come from here:
//
//	go test -run '^$' -bench . -benchtime 20x ./extract
func benchFile(b *testing.B, name string, opts ...Option) {
	data, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		b.Skipf("corpus file: %v", err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Process(context.Background(), data, name, nil, opts...); err != nil {
			b.Fatal(err)
		}
	}
}

// One-page text PDF (fpdf, core fonts) through the default engine: the
// pure-Go reader.
func BenchmarkTextPDFPage(b *testing.B) { benchFile(b, "inv-acme-industrial-usd.pdf") }

// The same page through poppler's pdfinfo and pdftotext.
func BenchmarkTextPDFPagePoppler(b *testing.B) {
	if !toolsOnPath().poppler() {
		b.Skip("poppler-utils not installed")
	}
	benchFile(b, "inv-acme-industrial-usd.pdf", withPDFEngine("poppler"))
}

// A three-page text PDF with the table running over every page.
func BenchmarkTextPDF3Pages(b *testing.B) { benchFile(b, "inv-bluepeak-supply-usd-multipage.pdf") }

// A 300 dpi PNG scan: rule removal and Tesseract.
func BenchmarkScanPage(b *testing.B) {
	if !toolsOnPath().canRasterise() {
		b.Skip("tesseract not installed")
	}
	benchFile(b, "inv-delacroix-vins-eur-scan.png")
}

// A PDF holding only a scanned page: pdftoppm at 300 dpi, rule removal and
// Tesseract.
func BenchmarkScannedPDFPage(b *testing.B) {
	if !toolsOnPath().canRasterise() {
		b.Skip("tesseract not installed")
	}
	benchFile(b, "inv-clearview-medical-usd-scanned.pdf")
}

func BenchmarkTextInvoice(b *testing.B) { benchFile(b, "inv-brightwave-media-eur.txt") }

func BenchmarkHTMLInvoice(b *testing.B) { benchFile(b, "inv-skyline-hosting-usd.html") }

// The small plain-text invoice that docket's end-to-end benchmark uploads
// (cmd/docket/bench_load.go), where the extractor's regexps stood out.
func BenchmarkSmallTextInvoice(b *testing.B) {
	data := []byte("INVOICE #7\nBill to: Bench Co\n\nDescription          Qty   Unit Price   Amount\nWidget model 7        2      17.50      35.00\nService fee            1      10.00      10.00\n\nTotal: 45.00 USD\n")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Process(context.Background(), data, "invoice.txt", nil); err != nil {
			b.Fatal(err)
		}
	}
}
