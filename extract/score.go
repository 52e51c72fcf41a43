package extract

import (
	"math"
	"regexp"
	"sort"
	"strings"
)

// Expected is a corpus ground-truth file, NAME.expected.json (format and
// scoring rule: shared/corpus/README.md).
type Expected struct {
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
	Notes string `json:"notes"`
}

// Result is what a run made of one document, for scoring.
type Result struct {
	Succeeded bool
	Pages     int
	Items     []Item
}

// Score counts matches over one or more documents; the rates are
// micro-averaged, as the corpus README prescribes.
type Score struct {
	Matched, Predicted, Expected int
	PagesOK, PagesN              int // documents expected to succeed whose page count was right
	OutcomeOK, OutcomeN          int
}

// Add sums o into s.
func (s *Score) Add(o Score) {
	s.Matched += o.Matched
	s.Predicted += o.Predicted
	s.Expected += o.Expected
	s.PagesOK += o.PagesOK
	s.PagesN += o.PagesN
	s.OutcomeOK += o.OutcomeOK
	s.OutcomeN += o.OutcomeN
}

func rate(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Precision is matched / predicted items (1 when nothing was predicted).
func (s Score) Precision() float64 { return rate(s.Matched, s.Predicted) }

// Recall is matched / expected items (1 when nothing was expected).
func (s Score) Recall() float64 { return rate(s.Matched, s.Expected) }

// F1 is the harmonic mean of precision and recall.
func (s Score) F1() float64 {
	p, r := s.Precision(), s.Recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// PageAccuracy is the share of documents expected to succeed whose page
// count was right.
func (s Score) PageAccuracy() float64 { return rate(s.PagesOK, s.PagesN) }

// OutcomeAccuracy is the share of documents that succeeded or failed as
// expected.
func (s Score) OutcomeAccuracy() float64 { return rate(s.OutcomeOK, s.OutcomeN) }

// ScoreDocument scores one document's result against its ground truth.
// Items predicted for a document that should fail count against precision.
func ScoreDocument(exp Expected, got Result) Score {
	s := Score{Predicted: len(got.Items), Expected: len(exp.LineItems), OutcomeN: 1}
	s.Matched = matchItems(exp, got.Items)
	if (exp.Outcome == "succeeded") == got.Succeeded {
		s.OutcomeOK = 1
	}
	if exp.Outcome == "succeeded" {
		s.PagesN = 1
		if got.Succeeded && got.Pages == exp.NumPages {
			s.PagesOK = 1
		}
	}
	return s
}

// reToken mirrors Python's re.findall(r"\w+", s.lower()), which is
// Unicode-aware: "ü" is a word character.
var reToken = regexp.MustCompile(`[\p{L}\p{N}_]+`)

func tokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range reToken.FindAllString(strings.ToLower(s), -1) {
		out[w] = true
	}
	return out
}

// jaccard is the token-set overlap of two descriptions.
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

// matchItems pairs predictions with expectations one to one: amounts equal
// to the cent and descriptions overlapping by at least half, the pair with
// the highest overlap first.
func matchItems(exp Expected, got []Item) int {
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
