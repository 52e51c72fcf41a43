package extract

import (
	"bytes"
	"image"
	"testing"
)

func TestRemoveRules(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 400, 300))
	for i := range g.Pix {
		g.Pix[i] = 245
	}
	set := func(x0, y0, x1, y1 int) {
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				g.Pix[y*g.Stride+x] = 20
			}
		}
	}
	set(10, 50, 390, 52)   // a table rule, 2 px thick
	set(200, 60, 202, 290) // a column rule
	set(20, 100, 150, 140) // a filled header cell: not a rule
	set(30, 200, 60, 203)  // a dash: too short to be a rule
	removeRules(g, 80)
	at := func(x, y int) uint8 { return g.Pix[y*g.Stride+x] }
	if at(300, 51) != 255 || at(201, 200) != 255 {
		t.Error("rules were not removed")
	}
	if at(80, 120) != 20 || at(45, 201) != 20 {
		t.Error("a filled area or a short stroke was removed")
	}
}

func TestPGMRoundTrip(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 3, 2))
	copy(g.Pix, []byte{1, 2, 3, 4, 5, 6})
	p := t.TempDir() + "/x.pgm"
	if err := writePGM(p, g); err != nil {
		t.Fatal(err)
	}
	back, err := readPGM(append([]byte("P5\n# comment\n3 2\n255\n"), g.Pix...))
	if err != nil || !bytes.Equal(back.Pix, g.Pix) || back.Bounds() != g.Bounds() {
		t.Errorf("readPGM: %v %v", back, err)
	}
	for _, bad := range []string{"", "P6\n1 1\n255\n\x00\x00\x00", "P5\n2 2\n255\n\x00", "P5\n99999999 1\n255\n", "P5\n1 1\n65535\n\x00\x00"} {
		if _, err := readPGM([]byte(bad)); err == nil {
			t.Errorf("readPGM(%q) accepted", bad)
		}
	}
}
