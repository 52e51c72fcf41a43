package extract_test

import (
	"context"
	"fmt"

	"github.com/docket/docket/extract"
)

func ExamplePreprocess() {
	csv := "Description;Qty;Unit Price;Amount\nBürostuhl;4;289,00;1.156,00\n;;Total;1.156,00\n"
	doc, err := extract.Preprocess(context.Background(), []byte(csv), "upload.bin")
	if err != nil {
		fmt.Println(extract.Code(err))
		return
	}
	fmt.Println(doc.ContentType, doc.Pages)

	_, err = extract.Preprocess(context.Background(), nil, "empty.pdf")
	fmt.Println(extract.Code(err))
	// Output:
	// text/csv 1
	// empty_document
}

func ExampleExtract() {
	text := `INVOICE #QF-10482
Description                          Qty   Unit Price     Amount
On-site diagnostics (per hour)       1.5        95.00     142.50
Replacement SSD 1TB NVMe               2       109.99     219.98
                                            Subtotal:     362.48
                                     TOTAL DUE (USD):     362.48
`
	doc, err := extract.Preprocess(context.Background(), []byte(text), "invoice.txt")
	if err != nil {
		fmt.Println(extract.Code(err))
		return
	}
	inv, err := extract.Extract(context.Background(), doc)
	if err != nil {
		fmt.Println(extract.Code(err))
		return
	}
	fmt.Println(inv.Currency)
	for _, it := range inv.Items {
		fmt.Printf("%s | %g x %.2f = %.2f\n", it.Description, it.Quantity, it.UnitPrice, it.Amount)
	}
	// Output:
	// USD
	// On-site diagnostics (per hour) | 1.5 x 95.00 = 142.50
	// Replacement SSD 1TB NVMe | 2 x 109.99 = 219.98
}

// Process runs both steps; a Remote extractor would take the place of nil
// (the built-in one) for teams with their own model service.
func ExampleProcess() {
	text := "Item;Qty;Price;Total\nWidget, blue;3;1.234,50;3.703,50\n;;Total EUR;3.703,50\n"
	doc, inv, err := extract.Process(context.Background(), []byte(text), "export.csv", nil, extract.MaxPages(10))
	if err != nil {
		fmt.Println(extract.Code(err))
		return
	}
	fmt.Println(doc.ContentType, doc.Pages, inv.Currency)
	for _, it := range inv.Items {
		fmt.Printf("%s | %g x %.2f = %.2f\n", it.Description, it.Quantity, it.UnitPrice, it.Amount)
	}
	// Output:
	// text/csv 1 EUR
	// Widget, blue | 3 x 1234.50 = 3703.50
}
