package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildPDF writes a minimal valid PDF whose pages have the given content
// streams, using Helvetica without widths as many generators do.
func buildPDF(contents ...string) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(s string) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), s)
	}
	b.WriteString("%PDF-1.4\n")
	n := len(contents)
	kids := make([]string, n)
	for i := range contents {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, c := range contents {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(c), c))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}

func textOp(x, y int, s string) string {
	return fmt.Sprintf("BT /F1 10 Tf %d %d Td (%s) Tj ET\n", x, y, s)
}

func TestPDFText(t *testing.T) {
	page := textOp(50, 700, "Description") + textOp(300, 700, "Qty") + textOp(360, 700, "Price") + textOp(450, 700, "Amount") +
		textOp(50, 680, "Hex bolts M8") + textOp(305, 680, "4") + textOp(360, 680, "$18.40") + textOp(450, 680, "$73.60")
	doc, err := Preprocess(context.Background(), buildPDF(page, textOp(50, 700, "Thank you")), "x.pdf")
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
		{"truncated pdf", ctx, buildPDF(textOp(1, 1, "x"))[:200], nil, CodeCorruptDocument},
		{"garbage after pdf magic", ctx, []byte("%PDF-1.7\n\x00\x01\x02 nothing else"), nil, CodeCorruptDocument},
		{"unknown binary", ctx, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0}, nil, CodeUnsupportedFormat},
		{"zip", ctx, []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), nil, CodeUnsupportedFormat},
		{"broken png", ctx, []byte("\x89PNG\r\n\x1a\nnot really"), nil, CodeCorruptDocument},
		{"pdf without text, no OCR", ctx, buildPDF("0 0 m 100 100 l S"), []Option{Tesseract("")}, CodeOCRUnavailable},
		{"pdf without text, no poppler", ctx, buildPDF("0 0 m 100 100 l S"), []Option{Poppler("")}, CodeOCRUnavailable},
		{"too many pages", ctx, buildPDF(textOp(1, 1, "a"), textOp(1, 1, "b"), textOp(1, 1, "c")), []Option{MaxPages(2)}, CodeTooManyPages},
		{"canceled", canceled, []byte("hello"), nil, CodeTimeout},
		// "1 begin" makes the PDF library's content interpreter panic.
		{"parser panic", ctx, buildPDF("1 begin"), nil, CodeInternal},
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
		t.Skipf("corpus not available: %v", err)
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
