package extract

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/ledongthuc/pdf"
)

// pdfFont decodes the strings shown with one font into text and widths.
// The library's own decoder is used for simple fonts, but its ToUnicode
// reader only steps the last byte of a bfrange, which turns "€" (U+20AC)
// into "¬" in the Identity-H fonts fpdf embeds; hence our own cmap.
type pdfFont struct {
	twoByte  bool
	cmap     map[int]string
	ranges   []cmapRange
	enc      pdf.TextEncoding
	widths   map[int]float64 // glyph widths in 1/1000 text-space units
	defWidth float64
}

type cmapRange struct {
	lo, hi int
	dst    []uint16
}

type glyph struct {
	text  string
	width float64 // 1/1000 text-space units
	space bool    // single-byte code 32, which receives word spacing
}

func loadFont(v pdf.Value) *pdfFont {
	f := &pdfFont{widths: map[int]float64{}, defWidth: 500}
	if v.IsNull() {
		return f
	}
	base := v.Key("BaseFont").Name()
	f.twoByte = v.Key("Subtype").Name() == "Type0"
	if tu := v.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		f.readCmap(tu)
	}
	if !f.twoByte {
		lf := pdf.Font{V: v}
		f.enc = lf.Encoder()
		first := int(v.Key("FirstChar").Int64())
		w := v.Key("Widths")
		for i := 0; i < w.Len(); i++ {
			f.widths[first+i] = w.Index(i).Float64()
		}
		if mw := v.Key("FontDescriptor").Key("MissingWidth"); mw.Kind() != pdf.Null && mw.Float64() > 0 {
			f.defWidth = mw.Float64()
		}
		if w.Len() == 0 {
			f.standardWidths(base)
		}
		return f
	}
	desc := v.Key("DescendantFonts").Index(0)
	f.defWidth = 1000
	if dw := desc.Key("DW"); dw.Kind() != pdf.Null {
		f.defWidth = dw.Float64()
	}
	w := desc.Key("W")
	for i := 0; i < w.Len(); {
		start := int(w.Index(i).Int64())
		next := w.Index(i + 1)
		if next.Kind() == pdf.Array {
			for j := 0; j < next.Len(); j++ {
				f.widths[start+j] = next.Index(j).Float64()
			}
			i += 2
			continue
		}
		end := int(next.Int64())
		wd := w.Index(i + 2).Float64()
		for c := start; c <= end && c-start < 65536; c++ {
			f.widths[c] = wd
		}
		i += 3
	}
	return f
}

// standardWidths fills in the metrics of the standard 14 fonts, which
// PDFs may use without listing widths. Exact widths matter little; they
// only decide whether two pieces of text touch or are separate cells.
func (f *pdfFont) standardWidths(base string) {
	var table string
	switch {
	case strings.HasPrefix(base, "Courier"):
		f.defWidth = 600
		return
	case strings.HasPrefix(base, "Helvetica-Bold"), strings.HasPrefix(base, "Arial-Bold"):
		table = helveticaBold
	case strings.HasPrefix(base, "Helvetica"), strings.HasPrefix(base, "Arial"):
		table = helvetica
	default:
		return
	}
	for i, s := range strings.Fields(table) {
		n, _ := strconv.Atoi(s)
		f.widths[32+i] = float64(n)
	}
	f.defWidth = 556
}

func (f *pdfFont) decode(raw string) []glyph {
	var out []glyph
	step := 1
	if f.twoByte {
		step = 2
	}
	for i := 0; i+step <= len(raw); i += step {
		code := int(raw[i])
		if step == 2 {
			code = code<<8 | int(raw[i+1])
		}
		g := glyph{space: step == 1 && code == 32}
		g.width = f.defWidth
		if w, ok := f.widths[code]; ok {
			g.width = w
		}
		g.text = f.lookup(code, raw[i:i+step])
		out = append(out, g)
	}
	return out
}

func (f *pdfFont) lookup(code int, raw string) string {
	if s, ok := f.cmap[code]; ok {
		return s
	}
	for _, r := range f.ranges {
		if code >= r.lo && code <= r.hi && len(r.dst) > 0 {
			d := append([]uint16(nil), r.dst...)
			d[len(d)-1] += uint16(code - r.lo)
			return string(utf16.Decode(d))
		}
	}
	if f.enc != nil {
		return f.enc.Decode(raw)
	}
	return string(rune(code))
}

var reCmapSection = regexp.MustCompile(`(?s)begin(bfchar|bfrange)(.*?)end(?:bfchar|bfrange)`)
var reCmapToken = regexp.MustCompile(`<[0-9A-Fa-f\s]*>|\[|\]`)

func (f *pdfFont) readCmap(v pdf.Value) {
	rc := v.Reader()
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 4<<20))
	if err != nil && len(data) == 0 {
		return
	}
	f.cmap = map[int]string{}
	for _, sec := range reCmapSection.FindAllStringSubmatch(string(data), -1) {
		toks := reCmapToken.FindAllString(sec[2], -1)
		if sec[1] == "bfchar" {
			for i := 0; i+1 < len(toks); i += 2 {
				f.cmap[hexInt(toks[i])] = string(utf16.Decode(hexUnits(toks[i+1])))
			}
			continue
		}
		for i := 0; i+2 < len(toks); {
			lo, hi := hexInt(toks[i]), hexInt(toks[i+1])
			if toks[i+2] != "[" {
				f.ranges = append(f.ranges, cmapRange{lo, hi, hexUnits(toks[i+2])})
				i += 3
				continue
			}
			j := i + 3
			for c := lo; j < len(toks) && toks[j] != "]"; j, c = j+1, c+1 {
				f.cmap[c] = string(utf16.Decode(hexUnits(toks[j])))
			}
			i = j + 1
		}
	}
}

func hexBytes(tok string) []byte {
	s := strings.Join(strings.Fields(strings.Trim(tok, "<>")), "")
	if len(s)%2 == 1 {
		s += "0"
	}
	out := make([]byte, 0, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		n, _ := strconv.ParseUint(s[i:i+2], 16, 8)
		out = append(out, byte(n))
	}
	return out
}

func hexInt(tok string) int {
	n := 0
	for _, b := range hexBytes(tok) {
		n = n<<8 | int(b)
	}
	return n
}

func hexUnits(tok string) []uint16 {
	b := hexBytes(tok)
	out := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		out = append(out, uint16(b[i])<<8|uint16(b[i+1]))
	}
	if len(b)%2 == 1 {
		out = append(out, uint16(b[len(b)-1]))
	}
	return out
}

// Widths of ASCII 32..126 from the Adobe core font metrics.
const helvetica = `278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278
556 556 556 556 556 556 556 556 556 556 278 278 584 584 584 556 1015 667 667 722 722 667 611
778 722 278 500 667 556 833 722 778 667 778 722 667 611 722 667 944 667 667 611 278 278 278
469 556 333 556 556 500 556 556 278 556 556 222 222 500 222 833 556 556 556 556 333 500 278
556 500 722 500 500 500 334 260 334 584`

const helveticaBold = `278 333 474 556 556 889 722 238 333 333 389 584 278 333 278 278
556 556 556 556 556 556 556 556 556 556 333 333 584 584 584 611 975 722 722 722 722 667 611
778 722 278 556 722 611 833 722 778 667 778 722 667 611 722 667 944 667 667 611 333 278 333
584 556 333 556 611 556 611 556 333 611 611 278 278 556 278 889 611 611 611 611 389 556 333
611 556 778 556 556 500 389 280 389 584`
