package extract

import (
	"math"
	"strings"
	"testing"
)

// Coordinates come straight from the document, so layout must survive any
// float: CI's fuzzer found a word left of the page (x < 0) panicking in
// strings.Repeat with a negative count.
func TestLayoutSurvivesBrokenCoordinates(t *testing.T) {
	t.Parallel()
	for _, x := range []float64{-7, -1e308, math.Inf(1), math.Inf(-1), math.NaN(), 1e308, 1e18} {
		runs := []textRun{
			{x: x, y: 100, end: x + 10, size: 10, text: "first"},
			{x: 50, y: 100, end: 60, size: 10, text: "mid"},
			{x: x, y: 100, end: x + 10, size: 10, text: "last"},
		}
		out := layoutPage(runs)
		if len(out) > 3*maxColumn {
			t.Errorf("x=%g: %d bytes of layout, want at most %d", x, len(out), 3*maxColumn)
		}
		for _, w := range []string{"first", "mid", "last"} {
			if !math.IsNaN(x) && !strings.Contains(out, w) {
				t.Errorf("x=%g: %q lost from %q", x, w, out)
			}
		}
	}
}

func TestTextColumnClamps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		x    float64
		want int
	}{{-3, 0}, {0, 0}, {12.4, 2}, {12.6, 3}, {math.NaN(), 0}, {math.Inf(-1), 0}, {math.Inf(1), maxColumn}, {1e300, maxColumn}} {
		if got := textColumn(c.x, 5); got != c.want {
			t.Errorf("textColumn(%g, 5) = %d, want %d", c.x, got, c.want)
		}
	}
}
