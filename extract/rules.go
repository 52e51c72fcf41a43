package extract

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"io"
	"os"
	"strconv"
)

// Table grids hurt OCR more than noise does: Tesseract merges a cell border
// into the word beside it, reads it as "|" or "—", and stretches the word's
// box over two rows. Invoices are full of grids, so pages are cleaned
// before OCR: dark runs much longer than any letter stroke, horizontal or
// vertical, are painted white.
const (
	ruleDark = 200 // grey levels below this are ink
)

// removeRules whitens horizontal and vertical rules in place. A run counts
// as a rule when it is longer than minRun pixels: a quarter inch at the
// page's resolution, twice the width of an em dash in 12 pt type, and
// thinner than a tenth of that (a filled area is not a rule). Tilted
// rules (scans are rarely straight) are found as well, as a chain of
// shorter runs: at 1.5° a thin rule still gives runs of over 100 pixels at
// 300 dpi. One pixel either side goes too, for the anti-aliased edge.
func removeRules(g *image.Gray, minRun int) {
	b := g.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 || minRun < 2 {
		return
	}
	// A rule is thin; a run inside a filled area (a shaded header with
	// white lettering) is not a rule, and whitening it would erase the
	// lettering with the fill.
	maxThick := max(3, minRun/10)
	pix := g.Pix[g.PixOffset(b.Min.X, b.Min.Y):]
	// scan walks lines of length pixels, step apart within a line and
	// lineStep apart between lines; across is the step perpendicular to
	// the line. Rows: step 1, across Stride; columns the other way round.
	// Pixels are whitened as rules are found: a rule crossing another is
	// then split, but both halves stay longer than minRun.
	scan := func(lines, length, lineStep, step, across, acrossN int) {
		thin := func(idx, pos int) bool {
			n := 1
			for i, p := 1, pos-1; i <= maxThick && p >= 0 && pix[idx-i*across] < ruleDark; i, p = i+1, p-1 {
				n++
			}
			for i, p := 1, pos+1; i <= maxThick && p < acrossN && pix[idx+i*across] < ruleDark; i, p = i+1, p+1 {
				n++
			}
			return n <= maxThick
		}
		for line := 0; line < lines; line++ {
			base := line * lineStep
			run := 0
			for i := 0; i <= length; i++ {
				if i < length && pix[base+i*step] < ruleDark {
					run++
					continue
				}
				for j := i - run; run >= minRun && j < i; j++ {
					idx := base + j*step
					if !thin(idx, line) {
						continue
					}
					for k := -1; k <= 1; k++ {
						if p := line + k; p >= 0 && p < acrossN {
							pix[idx+k*across] = 255
						}
					}
				}
				run = 0
			}
		}
	}
	scan(h, w, g.Stride, 1, g.Stride, h)
	scan(w, h, 1, g.Stride, 1, w)
}

// toGray converts any decoded image to 8-bit grey.
func toGray(img image.Image) *image.Gray {
	if g, ok := img.(*image.Gray); ok {
		return g
	}
	g := image.NewGray(img.Bounds())
	draw.Draw(g, g.Bounds(), img, img.Bounds().Min, draw.Src)
	return g
}

// writePGM writes binary PGM, which Tesseract reads and which costs
// nothing to encode (a PNG of a page takes longer to write than to OCR).
func writePGM(path string, g *image.Gray) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	b := g.Bounds()
	fmt.Fprintf(bw, "P5\n%d %d\n255\n", b.Dx(), b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		i := g.PixOffset(b.Min.X, y)
		bw.Write(g.Pix[i : i+b.Dx()])
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readPGM reads the binary 8-bit PGM that `pdftoppm -gray` writes.
func readPGM(data []byte) (*image.Gray, error) {
	r := bufio.NewReader(bytes.NewReader(data))
	var fields []int
	var magic string
	for len(fields) < 3 {
		tok, err := pgmToken(r)
		if err != nil {
			return nil, err
		}
		if magic == "" {
			magic = tok
			if magic != "P5" {
				return nil, fmt.Errorf("extract: not a binary PGM")
			}
			continue
		}
		n, err := strconv.Atoi(tok)
		if err != nil || n <= 0 || n > 1<<16 {
			return nil, fmt.Errorf("extract: bad PGM header %q", tok)
		}
		fields = append(fields, n)
	}
	w, h, maxv := fields[0], fields[1], fields[2]
	if maxv != 255 || w*h > maxImagePixels {
		return nil, fmt.Errorf("extract: unsupported PGM %dx%d/%d", w, h, maxv)
	}
	g := image.NewGray(image.Rect(0, 0, w, h))
	if _, err := io.ReadFull(r, g.Pix); err != nil {
		return nil, fmt.Errorf("extract: short PGM: %w", err)
	}
	return g, nil
}

// pgmToken reads one whitespace-separated header token, skipping comments;
// it consumes the single whitespace byte that ends the token.
func pgmToken(r *bufio.Reader) (string, error) {
	var tok []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			return "", fmt.Errorf("extract: short PGM header: %w", err)
		}
		switch {
		case c == '#' && len(tok) == 0:
			if _, err := r.ReadString('\n'); err != nil {
				return "", err
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if len(tok) > 0 {
				return string(tok), nil
			}
		default:
			if len(tok) > 16 {
				return "", fmt.Errorf("extract: bad PGM header")
			}
			tok = append(tok, c)
		}
	}
}
