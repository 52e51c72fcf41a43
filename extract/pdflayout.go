package extract

import (
	"math"
	"sort"
	"strings"
)

type layoutLine struct {
	y, size float64
	runs    []textRun
}

// layoutPage renders positioned text the way `pdftotext -layout` does, so
// that PDF text can go through the same reader as fixed-width text files:
// runs on one baseline form a line, runs far apart on a line are separated
// by at least two spaces (a column gap), words by one, and a vertical gap
// much larger than the font leaves a blank line (the end of a table row).
func layoutPage(runs []textRun) string {
	kept := runs[:0:0]
	for _, r := range runs {
		if strings.TrimSpace(r.text) != "" && r.size > 0 && !math.IsNaN(r.x+r.y) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].y > kept[j].y })
	var lines []*layoutLine
	for _, r := range kept {
		if n := len(lines); n > 0 && math.Abs(lines[n-1].y-r.y) <= 0.35*math.Max(lines[n-1].size, r.size) {
			l := lines[n-1]
			l.runs = append(l.runs, r)
			l.size = math.Max(l.size, r.size)
			continue
		}
		lines = append(lines, &layoutLine{y: r.y, size: r.size, runs: []textRun{r}})
	}
	unit := charWidth(kept)
	var out strings.Builder
	for i, l := range lines {
		if i > 0 && lines[i-1].y-l.y > 1.6*math.Max(l.size, lines[i-1].size) {
			out.WriteByte('\n')
		}
		out.WriteString(renderLine(l, unit))
		out.WriteByte('\n')
	}
	return out.String()
}

// charWidth is the page's typical character width, used to turn x
// positions into character columns.
func charWidth(runs []textRun) float64 {
	sizes := make([]float64, 0, len(runs))
	for _, r := range runs {
		sizes = append(sizes, r.size)
	}
	sort.Float64s(sizes)
	return math.Max(sizes[len(sizes)/2]*0.5, 1)
}

// maxColumn bounds the column a run may start at. A4 landscape in 6 pt
// type is under 300 columns, so a position beyond this is a broken
// coordinate, and it must not turn into megabytes of padding.
const maxColumn = 2048

// textColumn is the character column of position x. Coordinates come from the
// document and may be negative, infinite or NaN, and Go's float-to-int
// conversion of those is undefined (amd64 gives math.MinInt64), so the
// result is clamped to [0, maxColumn] first.
func textColumn(x, unit float64) int {
	c := math.Round(x / unit)
	if !(c > 0) { // also NaN
		return 0
	}
	return int(math.Min(c, maxColumn))
}

func renderLine(l *layoutLine, unit float64) string {
	sort.SliceStable(l.runs, func(i, j int) bool { return l.runs[i].x < l.runs[j].x })
	var b strings.Builder
	col := 0
	var prevEnd float64
	for i, r := range l.runs {
		text := r.text
		if i > 0 {
			gap := r.x - prevEnd
			switch {
			case gap > 0.8*r.size:
				want := textColumn(r.x, unit)
				pad := max(want-col, 2)
				b.WriteString(strings.Repeat(" ", pad))
				col += pad
				text = strings.TrimLeft(text, " ")
			case (gap > 0.12*r.size || r.word) && !strings.HasSuffix(b.String(), " ") && !strings.HasPrefix(text, " "):
				b.WriteByte(' ')
				col++
			}
		} else {
			want := textColumn(r.x, unit)
			b.WriteString(strings.Repeat(" ", want))
			col = want
		}
		b.WriteString(text)
		col += len([]rune(text))
		prevEnd = math.Max(r.end, r.x)
	}
	return strings.TrimRight(b.String(), " ")
}
