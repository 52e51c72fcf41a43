package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/png"
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
		t.Skip("tesseract and pdftoppm are not installed (.ci/run installs them)")
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
		t.Skip("tesseract and pdftoppm are not installed (.ci/run installs them)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Preprocess(ctx, whitePNG(t, 2550, 3300), "scan.png"); Code(err) != CodeTimeout {
		t.Errorf("got %v, want timeout", err)
	}
}
