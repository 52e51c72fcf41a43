package extract

import (
	"math"
	"sort"
	"unicode/utf8"
)

// word is one word with its box in top-down page coordinates (pixels for
// OCR, points for poppler), as both Tesseract and pdftotext report them.
// line groups the words an engine put on one text line; -1 when unknown.
type word struct {
	x0, y0, x1, y1 float64
	text           string
	line           int
}

// wordsToRuns turns positioned words into the text runs layoutPage renders,
// so that OCR, poppler and the pure-Go reader all feed one table reader.
//
// Scans are rarely straight: at 300 dpi a 1° tilt moves the right edge of a
// line by 40 px, more than a line's height, which would put an amount on
// the row below its description. The tilt is measured from the engine's own
// lines (the median slope of their word bottoms) and taken out before the
// words are grouped into rows again.
//
// Every word gets its line's median height times scale as its size: a
// word's own box is smaller without ascenders ("rue"), and layoutPage's gap
// rules are in font sizes, which relate to box heights differently per
// engine (OCR boxes hug the ink, poppler's span the font's ascent and
// descent).
func wordsToRuns(ws []word, scale float64) []textRun {
	if len(ws) == 0 {
		return nil
	}
	slope := skew(ws)
	type box struct {
		w        word
		top, bot float64
		rowTop   float64
		rowBot   float64
		row      int
	}
	bs := make([]box, 0, len(ws))
	for _, w := range ws {
		if w.y1 <= w.y0 || w.text == "" {
			continue
		}
		d := slope * (w.x0 + w.x1) / 2
		bs = append(bs, box{w: w, top: w.y0 - d, bot: w.y1 - d})
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].top+bs[i].bot < bs[j].top+bs[j].bot })
	// Rows by vertical overlap: a word joins the row if at least half its
	// height lies within the row's extent. Comparing bottoms or centres
	// instead splits rows wherever descenders ("gjpqy") or a shaded header
	// cell make boxes taller.
	var rows [][]int
	var ext [][2]float64
	for i, b := range bs {
		if n := len(rows); n > 0 {
			e := ext[n-1]
			if min(e[1], b.bot)-max(e[0], b.top) >= 0.5*(b.bot-b.top) {
				rows[n-1] = append(rows[n-1], i)
				ext[n-1] = [2]float64{min(e[0], b.top), max(e[1], b.bot)}
				continue
			}
		}
		rows = append(rows, []int{i})
		ext = append(ext, [2]float64{b.top, b.bot})
	}
	runs := make([]textRun, 0, len(bs))
	for _, r := range rows {
		hs := make([]float64, 0, len(r))
		bots := make([]float64, 0, len(r))
		for _, i := range r {
			hs = append(hs, bs[i].bot-bs[i].top)
			bots = append(bots, bs[i].bot)
		}
		sort.Float64s(hs)
		sort.Float64s(bots)
		size, y := hs[len(hs)/2]*scale, -bots[len(bots)/2]
		for _, i := range r {
			w := bs[i].w
			// Tesseract sometimes reports a box a pixel wide for a short
			// word ("x", "4"); a made-up gap after it would split a cell.
			end := max(w.x1, w.x0+0.3*size*float64(utf8.RuneCountInString(w.text)))
			runs = append(runs, textRun{x: w.x0, end: end, y: y, size: size, text: w.text, word: true})
		}
	}
	return runs
}

// skew is the median slope (dy/dx) between words of one engine line that
// are far apart and of the same height (so that neither box was stretched
// by a speck or a rule, nor differs by descenders); 0 when there are none.
// Words on one line need not be neighbours: the slope of the tilt is
// measured best over long distances.
func skew(ws []word) float64 {
	byLine := map[int][]word{}
	for _, w := range ws {
		if w.line >= 0 && w.y1 > w.y0 {
			byLine[w.line] = append(byLine[w.line], w)
		}
	}
	var slopes []float64
	for _, lw := range byLine {
		sort.Slice(lw, func(i, j int) bool { return lw[i].x0 < lw[j].x0 })
		for i := range lw {
			a := lw[i]
			ha := a.y1 - a.y0
			for _, b := range lw[i+1:] {
				hb := b.y1 - b.y0
				dx := (b.x0 + b.x1 - a.x0 - a.x1) / 2
				if dx < 5*ha || math.Abs(ha-hb) > 0.1*ha {
					continue
				}
				if s := (b.y1 - a.y1) / dx; math.Abs(s) < 0.05 { // beyond 3° it is not a tilt
					slopes = append(slopes, s)
				}
			}
			if len(slopes) > 5000 {
				break
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	sort.Float64s(slopes)
	return slopes[len(slopes)/2]
}
