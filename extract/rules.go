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
	mask := make([]bool, w*h)
	dark := func(x, y int) bool { return g.Pix[y*g.Stride+x] < ruleDark }
	// A rule is thin; a run inside a filled area (a shaded header with
	// white lettering) is not a rule, and whitening it would erase the
	// lettering with the fill.
	maxThick := max(3, minRun/10)
	thickness := func(x, y, dx, dy int) int {
		n := 1
		for _, s := range []int{-1, 1} {
			for i := 1; i <= maxThick; i++ {
				xx, yy := x+s*i*dx, y+s*i*dy
				if xx < 0 || yy < 0 || xx >= w || yy >= h || !dark(xx, yy) {
					break
				}
				n++
			}
		}
		return n
	}
	// One pass along rows (dx=1) and one along columns (dy=1): a pixel of
	// a long, thin run is masked with its neighbours across the run.
	scan := func(dx, dy int) {
		lines, length := h, w
		if dy == 1 {
			lines, length = w, h
		}
		at := func(line, i int) (int, int) {
			if dy == 1 {
				return line, i
			}
			return i, line
		}
		for line := 0; line < lines; line++ {
			run := 0
			for i := 0; i <= length; i++ {
				if i < length {
					if x, y := at(line, i); dark(x, y) {
						run++
						continue
					}
				}
				for j := i - run; run >= minRun && j < i; j++ {
					x, y := at(line, j)
					if thickness(x, y, dy, dx) > maxThick {
						continue
					}
					for k := -1; k <= 1; k++ {
						if xx, yy := x+k*dy, y+k*dx; xx >= 0 && yy >= 0 && xx < w && yy < h {
							mask[yy*w+xx] = true
						}
					}
				}
				run = 0
			}
		}
	}
	scan(1, 0)
	scan(0, 1)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if mask[y*w+x] {
				g.Pix[y*g.Stride+x] = 255
			}
		}
	}
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
