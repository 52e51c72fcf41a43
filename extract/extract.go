package extract

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

// Document is the result of Preprocess.
type Document struct {
	// ContentType is detected from the bytes, never from the file name:
	// application/pdf, text/plain, text/csv, text/html, image/png,
	// image/jpeg or image/tiff.
	ContentType string
	Pages       int
	// Text is the extracted text; PDF pages are joined with "\f", and HTML
	// table rows keep their cells separated by tabs.
	Text string
}

// Item is one line of an invoice's item table.
type Item struct {
	Description string
	Quantity    float64
	UnitPrice   float64
	Amount      float64
}

// Invoice is the result of Extract.
type Invoice struct {
	Currency string // ISO 4217 code, or "" when unknown
	Items    []Item
}

// Preprocess detects the document type and extracts its text. fileName is
// only a tie-breaker between plain text and CSV; it is never trusted over
// the bytes.
//
// When the error code is CodeOCRUnavailable the returned Document is not
// nil: its ContentType and Pages are filled in, so callers can record what
// they received even though there is no text yet.
func Preprocess(ctx context.Context, data []byte, fileName string, opts ...Option) (*Document, error) {
	cfg := newConfig(opts)
	return guarded(ctx, func() (*Document, error) {
		if cfg.testHook != nil {
			cfg.testHook()
		}
		return preprocess(ctx, data, fileName, cfg)
	})
}

// Extract finds the line items and currency in a preprocessed document. A
// document without an item table (a letter, say) yields zero items and no
// error.
func Extract(ctx context.Context, doc *Document) (*Invoice, error) {
	return guarded(ctx, func() (*Invoice, error) {
		if doc == nil {
			return nil, newError(CodeInternal, nil, "nil document")
		}
		return extract(ctx, doc)
	})
}

func preprocess(ctx context.Context, data []byte, fileName string, cfg config) (*Document, error) {
	if len(data) == 0 {
		return nil, newError(CodeEmptyDocument, nil, "the file is empty")
	}
	ct, err := detect(data, fileName)
	if err != nil {
		return nil, err
	}
	switch ct {
	case ctPDF:
		return readPDF(ctx, data, cfg)
	case ctPNG, ctJPEG, ctTIFF:
		return readImage(ctx, ct, data, cfg)
	}
	text := decodeText(data)
	if ct == ctHTML {
		text = htmlToText(text)
	}
	if strings.TrimSpace(text) == "" {
		return nil, newError(CodeEmptyDocument, nil, "the %s document has no text", ct)
	}
	return &Document{ContentType: ct, Pages: 1, Text: text}, nil
}

func extract(ctx context.Context, doc *Document) (*Invoice, error) {
	var rows []row
	switch doc.ContentType {
	case ctCSV:
		rows = csvRows(doc.Text)
	case ctPlain, ctHTML, ctPDF, ctPNG, ctJPEG, ctTIFF:
		rows = textRows(doc.Text)
	default:
		return nil, newError(CodeUnsupportedFormat, nil, "cannot extract items from %q", doc.ContentType)
	}
	if doc.ContentType != ctPlain && doc.ContentType != ctHTML && strings.TrimSpace(doc.Text) == "" {
		// A PDF or image whose text never came: OCR was not there when it
		// was preprocessed.
		return nil, newError(CodeOCRUnavailable, nil, "the %s has no text layer and OCR is not available", doc.ContentType)
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	nf := guessNumberFormat(rows, doc.ContentType == ctCSV && csvDelimiter(doc.Text) == ';')
	items := findItems(rows, nf)
	if len(items) == 0 {
		items = findReceiptItems(rows, nf)
	}
	inv := &Invoice{Items: items}
	if inv.Items == nil {
		inv.Items = []Item{}
	}
	// Only invoices get a currency: a letter that mentions "$12,480.00" in
	// prose is not priced in anything.
	if len(inv.Items) > 0 {
		inv.Currency = detectCurrency(doc.Text)
	}
	return inv, nil
}

// guarded runs fn on its own goroutine so that a parser stuck in a huge or
// hostile file cannot outlive the caller's context, and turns a parser panic
// into a CodeInternal error instead of killing the worker. A parser that
// ignores ctx keeps running until it returns; its result is then dropped.
func guarded[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, ctxError(err)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: newError(CodeInternal, fmt.Errorf("panic: %v\n%s", p, debug.Stack()), "parser failed")}
			}
		}()
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctxError(ctx.Err())
	}
}
