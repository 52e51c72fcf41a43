package extract

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The corpus lives outside the repository (it is shared with the other
// services' tests), next to the repo checkout.
var corpusDir = filepath.Join("..", "..", "shared", "corpus")

type expectedDoc struct {
	File        string  `json:"file"`
	ContentType string  `json:"content_type"`
	NumPages    int     `json:"num_pages"`
	Currency    *string `json:"currency"`
	Outcome     string  `json:"outcome"`
	LineItems   []struct {
		Description string  `json:"description"`
		Quantity    float64 `json:"quantity"`
		UnitPrice   float64 `json:"unit_price"`
		Amount      float64 `json:"amount"`
	} `json:"line_items"`
}

type tally struct{ matched, predicted, expected, pagesOK, pagesN, outcomeOK, outcomeN int }

func (t *tally) add(o tally) {
	t.matched += o.matched
	t.predicted += o.predicted
	t.expected += o.expected
	t.pagesOK += o.pagesOK
	t.pagesN += o.pagesN
	t.outcomeOK += o.outcomeOK
	t.outcomeN += o.outcomeN
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func (t tally) prf() (p, r, f float64) {
	p, r = ratio(t.matched, t.predicted), ratio(t.matched, t.expected)
	if p+r > 0 {
		f = 2 * p * r / (p + r)
	}
	return
}

var reWord = regexp.MustCompile(`\w+`)

// tokens mirrors Python's re.findall(r"\w+", s.lower()): Python's \w is
// Unicode-aware, so letters such as "ü" count as word characters.
func tokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range regexp.MustCompile(`[\p{L}\p{N}_]+`).FindAllString(strings.ToLower(s), -1) {
		out[w] = true
	}
	return out
}

func jaccard(a, b string) float64 {
	ta, tb := tokens(a), tokens(b)
	inter := 0
	for w := range ta {
		if tb[w] {
			inter++
		}
	}
	union := len(ta) + len(tb) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// matchItems pairs predictions with expectations greedily, highest Jaccard
// first, as the corpus README prescribes.
func matchItems(exp expectedDoc, got []Item) int {
	type pair struct {
		e, g int
		j    float64
	}
	var pairs []pair
	for ei, e := range exp.LineItems {
		for gi, g := range got {
			if math.Round(100*e.Amount) != math.Round(100*g.Amount) {
				continue
			}
			if j := jaccard(e.Description, g.Description); j >= 0.5 {
				pairs = append(pairs, pair{ei, gi, j})
			}
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].j > pairs[j].j })
	usedE, usedG := map[int]bool{}, map[int]bool{}
	n := 0
	for _, p := range pairs {
		if !usedE[p.e] && !usedG[p.g] {
			usedE[p.e], usedG[p.g] = true, true
			n++
		}
	}
	return n
}

func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("corpus folder %s not found (it sits beside the repo in shared/corpus): %v", corpusDir, err)
	}
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.expected.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no expected files in %s: %v", corpusDir, err)
	}
	var all, textual tally
	ocrOK := toolsOnPath().canRasterise()
	for _, ef := range files {
		raw, err := os.ReadFile(ef)
		if err != nil {
			t.Fatal(err)
		}
		var exp expectedDoc
		if err := json.Unmarshal(raw, &exp); err != nil {
			t.Fatalf("%s: %v", ef, err)
		}
		data, err := os.ReadFile(filepath.Join(corpusDir, exp.File))
		if err != nil {
			t.Fatal(err)
		}
		ext := filepath.Ext(exp.File)
		image := ext == ".png" || strings.Contains(exp.File, "scanned")
		ctx := context.Background()
		doc, perr := Preprocess(ctx, data, exp.File)
		var inv *Invoice
		xerr := perr
		if perr == nil {
			inv, xerr = Extract(ctx, doc)
		}
		var got []Item
		if inv != nil {
			got = inv.Items
		}
		var d tally
		d.expected, d.predicted = len(exp.LineItems), len(got)
		d.matched = matchItems(exp, got)
		outcome := "succeeded"
		if xerr != nil {
			outcome = "failed"
		}
		d.outcomeN = 1
		if outcome == exp.Outcome {
			d.outcomeOK = 1
		}
		if exp.Outcome == "succeeded" {
			d.pagesN = 1
			if doc != nil && doc.Pages == exp.NumPages {
				d.pagesOK = 1
			}
		}
		all.add(d)
		if ext == ".txt" || ext == ".csv" {
			textual.add(d)
			_, _, f := d.prf()
			if f != 1 {
				t.Errorf("%s: F1 %.3f (matched %d, predicted %d, expected %d)", exp.File, f, d.matched, d.predicted, d.expected)
			}
		}
		if ext == ".pdf" && exp.Outcome == "succeeded" && d.pagesOK != 1 {
			t.Errorf("%s: pages %v, want %d", exp.File, doc, exp.NumPages)
		}
		// Scans need OCR; without Tesseract they must say so. Every other
		// document must end the way the corpus says.
		if image && !ocrOK {
			if Code(xerr) != CodeOCRUnavailable {
				t.Errorf("%s: error %v, want %s", exp.File, xerr, CodeOCRUnavailable)
			}
		} else if d.outcomeOK != 1 {
			t.Errorf("%s: outcome %s (%v), want %s", exp.File, outcome, xerr, exp.Outcome)
		}
		if exp.Outcome == "succeeded" && exp.Currency != nil && inv != nil && inv.Currency != *exp.Currency {
			t.Errorf("%s: currency %q, want %q", exp.File, inv.Currency, *exp.Currency)
		}
		t.Logf("%-45s outcome=%-9s code=%-17s pages=%d items %d/%d matched, %d predicted", exp.File, outcome, Code(xerr), pagesOf(doc), d.matched, d.expected, d.predicted)
		if d.matched != d.expected || d.matched != d.predicted {
			for _, it := range got {
				t.Logf("    got  %+v", it)
			}
		}
	}
	// The targets; the corpus is small, so a regression of one item
	// shows.
	if p, r, f := all.prf(); ocrOK && (f < 0.95 || all.pagesOK != all.pagesN || all.outcomeOK != all.outcomeN) {
		t.Errorf("corpus: precision %.3f recall %.3f F1 %.3f, pages %d/%d, outcomes %d/%d; want F1 >= 0.95 and all pages and outcomes right",
			p, r, f, all.pagesOK, all.pagesN, all.outcomeOK, all.outcomeN)
	}
	for _, s := range []struct {
		name string
		t    tally
	}{{"all", all}, {"txt+csv", textual}} {
		p, r, f := s.t.prf()
		t.Logf("%-8s precision=%.3f recall=%.3f F1=%.3f pages=%.3f (%d/%d) outcome=%.3f (%d/%d)",
			s.name, p, r, f, ratio(s.t.pagesOK, s.t.pagesN), s.t.pagesOK, s.t.pagesN,
			ratio(s.t.outcomeOK, s.t.outcomeN), s.t.outcomeOK, s.t.outcomeN)
	}
}

func pagesOf(d *Document) int {
	if d == nil {
		return 0
	}
	return d.Pages
}
