package extract

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The corpus lives outside the repository (it is shared with the other
// services' tests), next to the repo checkout.
var corpusDir = filepath.Join("..", "..", "shared", "corpus")

func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		missing(t, "corpus folder %s not found (it sits beside the repo in shared/corpus): %v", corpusDir, err)
	}
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.expected.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no expected files in %s: %v", corpusDir, err)
	}
	var all, textual Score
	ocrOK := toolsOnPath().canRasterise()
	for _, ef := range files {
		raw, err := os.ReadFile(ef)
		if err != nil {
			t.Fatal(err)
		}
		var exp Expected
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
		outcome := "succeeded"
		if xerr != nil {
			outcome = "failed"
		}
		d := ScoreDocument(exp, Result{Succeeded: xerr == nil, Pages: pagesOf(doc), Items: got})
		all.Add(d)
		if ext == ".txt" || ext == ".csv" {
			textual.Add(d)
			if f := d.F1(); f != 1 {
				t.Errorf("%s: F1 %.3f (matched %d, predicted %d, expected %d)", exp.File, f, d.Matched, d.Predicted, d.Expected)
			}
		}
		if ext == ".pdf" && exp.Outcome == "succeeded" && d.PagesOK != 1 {
			t.Errorf("%s: pages %v, want %d", exp.File, doc, exp.NumPages)
		}
		// Scans need OCR; without Tesseract they must say so. Every other
		// document must end the way the corpus says.
		if image && !ocrOK {
			if Code(xerr) != CodeOCRUnavailable {
				t.Errorf("%s: error %v, want %s", exp.File, xerr, CodeOCRUnavailable)
			}
		} else if d.OutcomeOK != 1 {
			t.Errorf("%s: outcome %s (%v), want %s", exp.File, outcome, xerr, exp.Outcome)
		}
		if exp.Outcome == "succeeded" && exp.Currency != nil && inv != nil && inv.Currency != *exp.Currency {
			t.Errorf("%s: currency %q, want %q", exp.File, inv.Currency, *exp.Currency)
		}
		t.Logf("%-45s outcome=%-9s code=%-17s pages=%d items %d/%d matched, %d predicted", exp.File, outcome, Code(xerr), pagesOf(doc), d.Matched, d.Expected, d.Predicted)
		if d.Matched != d.Expected || d.Matched != d.Predicted {
			for _, it := range got {
				t.Logf("    got  %+v", it)
			}
		}
	}
	// The targets; the corpus is small, so a regression of one item
	// shows.
	if ocrOK && (all.F1() < 0.95 || all.PagesOK != all.PagesN || all.OutcomeOK != all.OutcomeN) {
		t.Errorf("corpus: precision %.3f recall %.3f F1 %.3f, pages %d/%d, outcomes %d/%d; want F1 >= 0.95 and all pages and outcomes right",
			all.Precision(), all.Recall(), all.F1(), all.PagesOK, all.PagesN, all.OutcomeOK, all.OutcomeN)
	}
	for _, s := range []struct {
		name string
		t    Score
	}{{"all", all}, {"txt+csv", textual}} {
		t.Logf("%-8s precision=%.3f recall=%.3f F1=%.3f pages=%.3f (%d/%d) outcome=%.3f (%d/%d)",
			s.name, s.t.Precision(), s.t.Recall(), s.t.F1(), s.t.PageAccuracy(), s.t.PagesOK, s.t.PagesN,
			s.t.OutcomeAccuracy(), s.t.OutcomeOK, s.t.OutcomeN)
	}
}

func pagesOf(d *Document) int {
	if d == nil {
		return 0
	}
	return d.Pages
}
