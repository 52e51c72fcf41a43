package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/extract/fixture"
)

func whitePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i := range g.Pix {
		g.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := png.Encode(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Blank scans are empty documents, not corrupt ones and not successes.
func TestOCRBlank(t *testing.T) {
	t.Parallel()
	if !toolsOnPath().canRasterise() {
		missing(t, "tesseract and pdftoppm are not installed (.ci/run installs them)")
	}
	for name, data := range map[string][]byte{"tiny": tinyPNG(t), "page": whitePNG(t, 1275, 1650)} {
		doc, err := Preprocess(context.Background(), data, "scan.png")
		if Code(err) != CodeEmptyDocument {
			t.Errorf("%s: %+v, %v; want empty_document", name, doc, err)
		}
	}
	if _, err := Preprocess(context.Background(), fixture.PDF("0 0 m 100 100 l S"), "x.pdf"); Code(err) != CodeEmptyDocument {
		t.Errorf("textless blank PDF: %v, want empty_document", err)
	}
}

// The TIFF page count comes from its directory chain, before any OCR, so
// that the page limit holds for multi-page faxes too.
func TestTIFFPages(t *testing.T) {
	tiff := func(pages int) []byte {
		var b bytes.Buffer
		b.WriteString("II*\x00")
		binary.Write(&b, binary.LittleEndian, uint32(8))
		for p := range pages {
			binary.Write(&b, binary.LittleEndian, uint16(0)) // no entries
			next := uint32(0)
			if p < pages-1 {
				next = uint32(b.Len() + 4)
			}
			binary.Write(&b, binary.LittleEndian, next)
		}
		return b.Bytes()
	}
	if n, ok := tiffPages(tiff(3)); !ok || n != 3 {
		t.Errorf("tiffPages = %d, %v", n, ok)
	}
	if _, err := Preprocess(context.Background(), tiff(4), "fax.tif", MaxPages(3)); Code(err) != CodeTooManyPages {
		t.Errorf("4-page TIFF with MaxPages(3): %v", err)
	}
	if _, err := Preprocess(context.Background(), []byte("II*\x00\xff\xff\x00\x00"), "fax.tif"); Code(err) != CodeCorruptDocument {
		t.Errorf("TIFF with a bad directory offset: %v", err)
	}
}

// OCR runs under the document's deadline: Tesseract is killed and the
// document ends with "timeout".
func TestOCRTimeout(t *testing.T) {
	t.Parallel()
	if !toolsOnPath().canRasterise() {
		missing(t, "tesseract and pdftoppm are not installed (.ci/run installs them)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Preprocess(ctx, whitePNG(t, 2550, 3300), "scan.png"); Code(err) != CodeTimeout {
		t.Errorf("got %v, want timeout", err)
	}
}

// rotate turns g by deg degrees about its centre (nearest neighbour, white
// outside), as a scanner feeding a sheet at a slant does.
func rotate(g *image.Gray, deg float64) *image.Gray {
	b := g.Bounds()
	out := image.NewGray(b)
	s, c := math.Sincos(deg * math.Pi / 180)
	cx, cy := float64(b.Dx())/2, float64(b.Dy())/2
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			dx, dy := float64(x)-cx, float64(y)-cy
			sx, sy := int(c*dx+s*dy+cx), int(-s*dx+c*dy+cy)
			v := uint8(255)
			if sx >= 0 && sy >= 0 && sx < b.Dx() && sy < b.Dy() {
				v = g.Pix[sy*g.Stride+sx]
			}
			out.Pix[y*out.Stride+x] = v
		}
	}
	return out
}

// A generated invoice with a ruled table, rasterised at 300 dpi, tilted by
// 1.3° and read back: the tilt correction and the rule removal are not
// tuned to the corpus scans.
func TestSyntheticTiltedGridScan(t *testing.T) {
	t.Parallel()
	xs := []int{60, -330, -440, -555}
	var grid strings.Builder
	for i := range 6 { // horizontal rules between the rows
		y := 692 - 14*i
		fmt.Fprintf(&grid, "%d %d m %d %d l S\n", 55, y, 560, y)
	}
	for _, x := range []int{55, 300, 340, 450, 560} {
		fmt.Fprintf(&grid, "%d %d m %d %d l S\n", x, 692, x, 622)
	}
	page := fixture.TextOp(60, 740, "Rechnung 5531 (Betrag in EUR)") + grid.String() + pdfTable(680, []int{xs[0], xs[1], xs[2], xs[3]},
		[]string{"Beschreibung", "Menge", "Einzelpreis", "Betrag"},
		[]string{"Wandfarbe weiss 10 l", "3", "49,90", "149,70"},
		[]string{"Malerrolle Profi", "5", "8,45", "42,25"},
		[]string{"Abdeckfolie 4 x 5 m", "10", "2,10", "21,00"},
		[]string{"Arbeitszeit Maler", "7,5", "52,00", "390,00"}) +
		pdfTable(560, xs, []string{"", "", "Summe", "602,95"})
	scan := encodePNG(t, rotate(renderPage(t, page, 300), 1.3))
	doc, inv, err := Process(context.Background(), scan, "scan.png", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Amounts, quantities and prices must be exact, row by row, and nothing
	// invented. OCR may move spaces inside a description ("5m", "P rofi" was
	// seen on a fresh CI machine) and drop a short trailing unit ("10 l"),
	// but change no other letter.
	want := []Item{{"Wandfarbe weiss 10 l", 3, 49.9, 149.7}, {"Malerrolle Profi", 5, 8.45, 42.25}, {"Abdeckfolie 4 x 5 m", 10, 2.1, 21}, {"Arbeitszeit Maler", 7.5, 52, 390}}
	ok := inv.Currency == "EUR" && len(inv.Items) == len(want)
	for i := 0; ok && i < len(want); i++ {
		g, w := inv.Items[i], want[i]
		ok = g.Quantity == w.Quantity && g.UnitPrice == w.UnitPrice && g.Amount == w.Amount &&
			sameLettersUpToUnit(g.Description, w.Description)
	}
	if !ok {
		t.Errorf("currency %q, items %+v\nfrom\n%s", inv.Currency, inv.Items, doc.Text)
	}
}

// renderPage draws a one-page PDF with the given content at dpi with
// poppler, as a scanner would see the printed page; it skips the test when
// the OCR tools are missing.
func renderPage(t *testing.T, content string, dpi int) *image.Gray {
	t.Helper()
	tl := toolsOnPath()
	if !tl.canRasterise() {
		missing(t, "tesseract and pdftoppm are not installed (.ci/run installs them)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/in.pdf", fixture.PDF(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runTool(context.Background(), dir, tl.pdftoppm, "-r", fmt.Sprint(dpi), "-gray", "-singlefile", dir+"/in.pdf", dir+"/scan"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(dir + "/scan.pgm")
	if err != nil {
		t.Fatal(err)
	}
	g, err := readPGM(raw)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func encodePNG(t *testing.T, g *image.Gray) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFixOCRNumber(t *testing.T) {
	for in, want := range map[string]string{
		"S45.00": "$45.00", "§1,303.50": "$1,303.50", "1O.00": "10.00", "l2,50": "12,50", "€1.2O9,6O": "€1.209,60",
		"$45.00": "$45.00", "Sales": "Sales", "SOIL": "SOIL", "Oil.oo": "Oil.oo", "2024": "2024", "S12": "S12",
	} {
		if got := fixOCRNumber(in); got != want {
			t.Errorf("fixOCRNumber(%q) = %q, want %q", in, got, want)
		}
	}
}

// sameLettersUpToUnit reports whether got is want with spaces moved and at
// most a two-letter unit cut off the end.
func sameLettersUpToUnit(got, want string) bool {
	squeeze := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), "") }
	g, w := squeeze(got), squeeze(want)
	return g != "" && strings.HasPrefix(w, g) && len(w)-len(g) <= 2
}
