package extract

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// goPDFPages counts the pages and lays out each page's text with the
// pure-Go reader. The library rejects truncated files (no xref, no
// trailer) at open time, which is exactly when the upload should be
// reported as corrupt. The page limit is checked before any page is read.
//
// The library panics on some malformed content streams; that panic is
// turned into an internal_error here, not only by the guard around
// Preprocess, so that poppler still gets its chance at the file.
func goPDFPages(ctx context.Context, data []byte, cfg config) (n int, pages []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, pages, err = 0, nil, newError(CodeInternal, fmt.Errorf("panic: %v", p), "the PDF reader failed")
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, nil, newError(CodeCorruptDocument, err, "unreadable PDF")
	}
	n = r.NumPage()
	if n <= 0 {
		return 0, nil, newError(CodeCorruptDocument, nil, "PDF has no pages")
	}
	if n > cfg.maxPages {
		return n, nil, tooManyPages(n, cfg)
	}
	pages = make([]string, 0, n)
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return 0, nil, ctxError(err)
		}
		p := r.Page(i)
		if p.V.IsNull() {
			return 0, nil, newError(CodeCorruptDocument, nil, "PDF page %d is missing", i)
		}
		pages = append(pages, layoutPage(pageRuns(p)))
	}
	return n, pages, nil
}

func tooManyPages(n int, cfg config) error {
	return newError(CodeTooManyPages, nil, "PDF has %d pages, the limit is %d", n, cfg.maxPages)
}

// textRun is one string drawn by Tj/TJ, placed in page space, or one word
// read by OCR or poppler. A Tj string may be part of a word, so runs are
// glued when nothing separates them; whole words never are.
type textRun struct {
	x, y, end, size float64
	text            string
	word            bool
}

type matrix [6]float64 // a b c d e f, as in the PDF spec

var identity = matrix{1, 0, 0, 1, 0, 0}

func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

type gstate struct {
	ctm                matrix
	tc, tw, th, tl, ts float64
	fontSize           float64
	font               *pdfFont
}

// pageRuns interprets the page's content stream for text only. The
// library's Page.Content appends a glyph for a newline after every TJ
// (decoded through the font, so it shows up as a stray letter), which is
// why the operators are walked here instead.
func pageRuns(p pdf.Page) []textRun {
	contents := p.V.Key("Contents")
	if contents.Kind() == pdf.Null {
		return nil
	}
	fonts := map[string]*pdfFont{}
	res := p.Resources().Key("Font")
	g := gstate{ctm: identity, th: 1}
	var stack []gstate
	var tm, tlm matrix
	var runs []textRun
	show := func(s string) {
		if g.font == nil {
			g.font = loadFont(pdf.Value{})
		}
		start := matrix{g.fontSize * g.th, 0, 0, g.fontSize, 0, g.ts}.mul(tm).mul(g.ctm)
		var b strings.Builder
		for _, gl := range g.font.decode(s) {
			b.WriteString(gl.text)
			adv := gl.width/1000*g.fontSize + g.tc
			if gl.space {
				adv += g.tw
			}
			tm = matrix{1, 0, 0, 1, adv * g.th, 0}.mul(tm)
		}
		end := matrix{g.fontSize * g.th, 0, 0, g.fontSize, 0, g.ts}.mul(tm).mul(g.ctm)
		size := math.Hypot(start[2], start[3])
		runs = append(runs, textRun{x: start[4], y: start[5], end: end[4], size: size, text: b.String()})
	}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		num := func(i int) float64 {
			if i < len(args) {
				return args[i].Float64()
			}
			return 0
		}
		mat := func() matrix { return matrix{num(0), num(1), num(2), num(3), num(4), num(5)} }
		switch op {
		case "q":
			stack = append(stack, g)
		case "Q":
			if len(stack) > 0 {
				g, stack = stack[len(stack)-1], stack[:len(stack)-1]
			}
		case "cm":
			g.ctm = mat().mul(g.ctm)
		case "BT":
			tm, tlm = identity, identity
		case "Tf":
			if len(args) == 2 {
				name := args[0].Name()
				if fonts[name] == nil {
					fonts[name] = loadFont(res.Key(name))
				}
				g.font, g.fontSize = fonts[name], num(1)
			}
		case "Tc":
			g.tc = num(0)
		case "Tw":
			g.tw = num(0)
		case "Tz":
			g.th = num(0) / 100
		case "TL":
			g.tl = num(0)
		case "Ts":
			g.ts = num(0)
		case "Td", "TD":
			if op == "TD" {
				g.tl = -num(1)
			}
			tlm = matrix{1, 0, 0, 1, num(0), num(1)}.mul(tlm)
			tm = tlm
		case "Tm":
			tm, tlm = mat(), mat()
		case "T*":
			tlm = matrix{1, 0, 0, 1, 0, -g.tl}.mul(tlm)
			tm = tlm
		case "Tj", "'", "\"":
			if op != "Tj" {
				tlm = matrix{1, 0, 0, 1, 0, -g.tl}.mul(tlm)
				tm = tlm
			}
			if op == "\"" && len(args) == 3 {
				g.tw, g.tc = num(0), num(1)
			}
			if len(args) > 0 {
				show(args[len(args)-1].RawString())
			}
		case "TJ":
			if len(args) == 0 {
				return
			}
			a := args[0]
			for i := 0; i < a.Len(); i++ {
				x := a.Index(i)
				if x.Kind() == pdf.String {
					show(x.RawString())
					continue
				}
				tm = matrix{1, 0, 0, 1, -x.Float64() / 1000 * g.fontSize * g.th, 0}.mul(tm)
			}
		}
	})
	return runs
}
