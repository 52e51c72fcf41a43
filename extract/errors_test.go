package extract

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/extract/fixture"
)

func TestPDFText(t *testing.T) {
	page := fixture.TextOp(50, 700, "Description") + fixture.TextOp(300, 700, "Qty") + fixture.TextOp(360, 700, "Price") + fixture.TextOp(450, 700, "Amount") +
		fixture.TextOp(50, 680, "Hex bolts M8") + fixture.TextOp(305, 680, "4") + fixture.TextOp(360, 680, "$18.40") + fixture.TextOp(450, 680, "$73.60")
	doc, err := Preprocess(context.Background(), fixture.PDF(page, fixture.TextOp(50, 700, "Thank you")), "x.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if doc.ContentType != ctPDF || doc.Pages != 2 || strings.Count(doc.Text, "\f") != 1 {
		t.Fatalf("doc %+v", doc)
	}
	inv, err := Extract(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Items) != 1 || inv.Items[0] != (Item{"Hex bolts M8", 4, 18.4, 73.6}) || inv.Currency != "USD" {
		t.Errorf("got %+v from\n%s", inv, doc.Text)
	}
}

func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		data []byte
		opts []Option
		want string
	}{
		{"empty", ctx, nil, nil, CodeEmptyDocument},
		{"blank text", ctx, []byte(" \n\t\n"), nil, CodeEmptyDocument},
		{"truncated pdf", ctx, fixture.PDF(fixture.TextOp(1, 1, "x"))[:200], nil, CodeCorruptDocument},
		{"garbage after pdf magic", ctx, []byte("%PDF-1.7\n\x00\x01\x02 nothing else"), nil, CodeCorruptDocument},
		{"unknown binary", ctx, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0}, nil, CodeUnsupportedFormat},
		{"zip", ctx, []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), nil, CodeUnsupportedFormat},
		{"broken png", ctx, []byte("\x89PNG\r\n\x1a\nnot really"), nil, CodeCorruptDocument},
		{"pdf without text, no OCR", ctx, fixture.PDF("0 0 m 100 100 l S"), []Option{Tesseract("")}, CodeOCRUnavailable},
		{"pdf without text, no poppler", ctx, fixture.PDF("0 0 m 100 100 l S"), []Option{Poppler("")}, CodeOCRUnavailable},
		{"too many pages", ctx, fixture.PDF(fixture.TextOp(1, 1, "a"), fixture.TextOp(1, 1, "b"), fixture.TextOp(1, 1, "c")), []Option{MaxPages(2)}, CodeTooManyPages},
		{"canceled", canceled, []byte("hello"), nil, CodeTimeout},
		// "1 begin" makes the PDF library's content interpreter panic.
		{"parser panic", ctx, fixture.PDF("1 begin"), []Option{Poppler("")}, CodeInternal},
		{"hook panic", ctx, []byte("hello"), []Option{withTestHook(func() { panic("boom") })}, CodeInternal},
	}
	for _, tc := range tests {
		_, err := Preprocess(tc.ctx, tc.data, "f", tc.opts...)
		if got := Code(err); got != tc.want {
			t.Errorf("%s: Code = %q (%v), want %q", tc.name, got, err, tc.want)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || !strings.HasPrefix(e.Error(), "extract: ")) {
			t.Errorf("%s: %v is not an *Error with the extract: prefix", tc.name, err)
		}
	}
}

// A parser that never looks at the context must not hold the caller past
// its deadline.
func TestDeadlineWhileParsing(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Preprocess(ctx, []byte("hello"), "a.txt", withTestHook(func() { <-release }))
	if Code(err) != CodeTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want a timeout", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("Preprocess returned after %v", time.Since(start))
	}
}

func TestCorpusFailures(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "inv-pacific-usd-truncated.pdf"))
	if err != nil {
		missing(t, "corpus not available: %v", err)
	}
	if _, err := Preprocess(context.Background(), data, "inv.pdf"); Code(err) != CodeCorruptDocument {
		t.Errorf("truncated corpus PDF: %v", err)
	}
	data, err = os.ReadFile(filepath.Join(corpusDir, "inv-bluepeak-supply-usd-multipage.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Preprocess(context.Background(), data, "inv.pdf", MaxPages(2)); Code(err) != CodeTooManyPages {
		t.Errorf("3-page PDF with MaxPages(2): %v", err)
	}
}

func TestImagesNeedOCR(t *testing.T) {
	doc, err := Preprocess(context.Background(), tinyPNG(t), "scan.pdf", Tesseract(""))
	if Code(err) != CodeOCRUnavailable || doc == nil || doc.ContentType != ctPNG || doc.Pages != 1 {
		t.Errorf("png: %+v, %v", doc, err)
	}
}

func TestExtractErrors(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		doc  *Document
		want string
	}{
		{"nil", ctx, nil, CodeInternal},
		{"image", ctx, &Document{ContentType: ctJPEG, Pages: 1}, CodeOCRUnavailable},
		{"unknown", ctx, &Document{ContentType: "application/zip"}, CodeUnsupportedFormat},
		{"canceled", canceled, &Document{ContentType: ctPlain, Text: "x"}, CodeTimeout},
	}
	for _, tc := range cases {
		if _, err := Extract(tc.ctx, tc.doc); Code(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

func TestCode(t *testing.T) {
	deadline, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-deadline.Done()
	_, err := Preprocess(deadline, []byte("x"), "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the context error should stay reachable: %v", err)
	}
	tests := map[error]string{
		nil:                                      "",
		errors.New("x"):                          CodeInternal,
		context.DeadlineExceeded:                 CodeTimeout,
		fmt.Errorf("wrap: %w", context.Canceled): CodeTimeout,
		fmt.Errorf("wrap: %w", &Error{Code: CodeCorruptDocument, Message: "extract: x"}): CodeCorruptDocument,
		err: CodeTimeout,
	}
	for in, want := range tests {
		if got := Code(in); got != want {
			t.Errorf("Code(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestMaxPagesDefault(t *testing.T) {
	if c := newConfig(nil); c.maxPages != DefaultMaxPages {
		t.Errorf("default %d", c.maxPages)
	}
	if c := newConfig([]Option{MaxPages(0)}); c.maxPages != DefaultMaxPages {
		t.Errorf("MaxPages(0) should keep the default, got %d", c.maxPages)
	}
	if c := newConfig([]Option{MaxPages(3)}); c.maxPages != 3 {
		t.Errorf("MaxPages(3) gave %d", c.maxPages)
	}
}
