package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/docket/docket/extract"
)

// evalDoc is one scored document of `docket eval`.
type evalDoc struct {
	File      string        `json:"file"`
	Expected  string        `json:"expected_outcome"`
	Outcome   string        `json:"outcome"`
	Code      string        `json:"code,omitempty"`
	Pages     int           `json:"num_pages"`
	WantPages int           `json:"expected_num_pages"`
	Score     extract.Score `json:"score"`
	F1        float64       `json:"f1"`
	Millis    float64       `json:"ms"`
}

// evalReport is the JSON form of `docket eval --json`.
type evalReport struct {
	Documents       []evalDoc `json:"documents"`
	Precision       float64   `json:"precision"`
	Recall          float64   `json:"recall"`
	F1              float64   `json:"f1"`
	PageAccuracy    float64   `json:"page_count_accuracy"`
	OutcomeAccuracy float64   `json:"outcome_accuracy"`
	Worst           []string  `json:"worst"`
}

// runEval is `docket eval DIR`: extract every document that has a
// NAME.expected.json in DIR and score the results by the corpus rule.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg Config
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.bindExtractFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	worstN := fs.Int("worst", 5, "how many of the worst documents to list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("docket eval [flags] DIR")
	}
	if err := cfg.validateExtraction(); err != nil {
		return err
	}
	ex, err := cfg.extractor()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(fs.Arg(0), "*.expected.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("eval: no *.expected.json in %s", fs.Arg(0))
	}
	var rep evalReport
	var total extract.Score
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := evalOne(ctx, &cfg, ex, f)
		if err != nil {
			return err
		}
		total.Add(d.Score)
		rep.Documents = append(rep.Documents, d)
	}
	rep.Precision, rep.Recall, rep.F1 = total.Precision(), total.Recall(), total.F1()
	rep.PageAccuracy, rep.OutcomeAccuracy = total.PageAccuracy(), total.OutcomeAccuracy()
	worst := worstDocs(rep.Documents, *worstN)
	for _, d := range worst {
		rep.Worst = append(rep.Worst, d.File)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "document\toutcome\tcode\tpages\tmatched/expected\tpredicted\tF1\tms")
	for _, d := range rep.Documents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d/%d\t%d\t%.3f\t%.0f\n", d.File, d.Outcome, d.Code, d.Pages, d.WantPages,
			d.Score.Matched, d.Score.Expected, d.Score.Predicted, d.F1, d.Millis)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nprecision %.3f  recall %.3f  F1 %.3f  (%d matched, %d predicted, %d expected)\n",
		rep.Precision, rep.Recall, rep.F1, total.Matched, total.Predicted, total.Expected)
	fmt.Fprintf(stdout, "page-count accuracy %.1f%% (%d/%d)  outcome accuracy %.1f%% (%d/%d)\n",
		100*rep.PageAccuracy, total.PagesOK, total.PagesN, 100*rep.OutcomeAccuracy, total.OutcomeOK, total.OutcomeN)
	fmt.Fprintln(stdout, "\nworst documents:")
	if len(worst) == 0 {
		fmt.Fprintln(stdout, "(none: every document is right)")
	}
	for i, d := range worst {
		fmt.Fprintf(stdout, "%d. %s  F1 %.3f  matched %d/%d, predicted %d, outcome %s (expected %s), pages %d (expected %d)\n",
			i+1, d.File, d.F1, d.Score.Matched, d.Score.Expected, d.Score.Predicted, d.Outcome, d.Expected, d.Pages, d.WantPages)
	}
	return nil
}

// evalOne extracts and scores the document named in one expected file.
func evalOne(ctx context.Context, cfg *Config, ex extract.Extractor, expectedFile string) (evalDoc, error) {
	raw, err := os.ReadFile(expectedFile)
	if err != nil {
		return evalDoc{}, err
	}
	var exp extract.Expected
	if err := json.Unmarshal(raw, &exp); err != nil {
		return evalDoc{}, fmt.Errorf("eval: %s: %w", expectedFile, err)
	}
	start := time.Now()
	out, xerr := extractFile(ctx, cfg, ex, filepath.Join(filepath.Dir(expectedFile), exp.File))
	d := evalDoc{File: exp.File, Expected: exp.Outcome, Outcome: "succeeded", WantPages: exp.NumPages,
		Millis: float64(time.Since(start).Microseconds()) / 1000}
	res := extract.Result{Succeeded: xerr == nil}
	if xerr != nil {
		d.Outcome, d.Code = "failed", extract.Code(xerr)
	} else {
		d.Pages, res.Pages = out.NumPages, out.NumPages
		for _, it := range out.LineItems {
			res.Items = append(res.Items, extract.Item{Description: it.Description, Quantity: it.Quantity, UnitPrice: it.UnitPrice, Amount: it.Amount})
		}
	}
	d.Score = extract.ScoreDocument(exp, res)
	d.F1 = d.Score.F1()
	if d.Score.OutcomeOK == 0 || d.Score.PagesOK < d.Score.PagesN {
		d.F1 = min(d.F1, 0) // a wrong outcome or page count is as bad as it gets
	}
	return d, nil
}

// worstDocs lists the n documents with the lowest F1 (wrong outcomes and
// page counts first), leaving out the perfect ones.
func worstDocs(docs []evalDoc, n int) []evalDoc {
	var bad []evalDoc
	for _, d := range docs {
		if d.F1 < 1 {
			bad = append(bad, d)
		}
	}
	sort.SliceStable(bad, func(i, j int) bool { return bad[i].F1 < bad[j].F1 })
	if len(bad) > n {
		bad = bad[:n]
	}
	return bad
}
