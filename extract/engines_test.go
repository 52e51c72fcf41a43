package extract

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/extract/fixture"
)

// TestPDFEngines reads every text PDF of the corpus with both engines and
// logs their accuracy and speed; README's engine table comes from here
// (go test -run TestPDFEngines -v ./extract). It fails if either engine
// drops below the F1 target, so the fallback stays good enough to
// be primary on a machine without poppler.
func TestPDFEngines(t *testing.T) {
	if !toolsOnPath().poppler() {
		missing(t, "poppler-utils is not installed (.ci/run installs it)")
	}
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.expected.json"))
	if len(files) == 0 {
		missing(t, "corpus not found")
	}
	for _, engine := range []string{"go", "poppler"} {
		var total Score
		var elapsed time.Duration
		pages := 0
		for _, ef := range files {
			raw, _ := os.ReadFile(ef)
			var exp Expected
			if err := json.Unmarshal(raw, &exp); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(exp.File, ".pdf") || strings.Contains(exp.File, "scanned") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(corpusDir, exp.File))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			doc, inv, err := Process(context.Background(), data, exp.File, nil, withPDFEngine(engine), Tesseract(""))
			elapsed += time.Since(start)
			res := Result{Succeeded: err == nil}
			if err == nil {
				res.Pages, res.Items = doc.Pages, inv.Items
				pages += doc.Pages
			}
			d := ScoreDocument(exp, res)
			if d.F1() < 1 || d.OutcomeOK != 1 || d.PagesOK != d.PagesN {
				t.Logf("%s %s: F1 %.3f outcome %v pages %d", engine, exp.File, d.F1(), err, res.Pages)
			}
			total.Add(d)
		}
		t.Logf("engine %-8s F1 %.3f (P %.3f R %.3f), pages %d/%d, outcomes %d/%d, %.1f ms per page",
			engine, total.F1(), total.Precision(), total.Recall(), total.PagesOK, total.PagesN, total.OutcomeOK, total.OutcomeN,
			float64(elapsed.Microseconds())/1000/float64(max(pages, 1)))
		if total.F1() < 0.95 || total.OutcomeOK != total.OutcomeN {
			t.Errorf("engine %s below target", engine)
		}
	}
}

func TestGarbled(t *testing.T) {
	if garbled([]string{"Invoice 12\n Widget  2  3.00  6.00", "\f"}) {
		t.Error("clean text called garbled")
	}
	if !garbled([]string{"\x01\x02\x03\ufffd\ufffd abc"}) {
		t.Error("control characters not called garbled")
	}
}

// A PDF the Go reader cannot open (its cross-reference offsets are wrong)
// is read by poppler, which rebuilds the table.
func TestPopplerSecondOpinion(t *testing.T) {
	if !toolsOnPath().poppler() {
		missing(t, "poppler-utils is not installed (.ci/run installs it)")
	}
	data := fixture.PDF(fixture.TextOp(50, 700, "Description") + fixture.TextOp(300, 700, "Qty") + fixture.TextOp(360, 700, "Price") +
		fixture.TextOp(450, 700, "Amount") + fixture.TextOp(50, 680, "Hex bolts M8") + fixture.TextOp(305, 680, "4") +
		fixture.TextOp(360, 680, "$18.40") + fixture.TextOp(450, 680, "$73.60"))
	broken := []byte(strings.Replace(string(data), "startxref\n", "startxref\n9", 1))
	if _, _, err := goPDFPages(context.Background(), broken, newConfig(nil)); Code(err) != CodeCorruptDocument {
		t.Fatalf("the Go reader should reject the file: %v", err)
	}
	doc, inv, err := Process(context.Background(), broken, "x.pdf", nil)
	if err != nil || doc.Pages != 1 || len(inv.Items) != 1 || inv.Items[0].Amount != 73.6 {
		t.Errorf("poppler fallback: %+v %+v %v", doc, inv, err)
	}
}

func TestImageDPI(t *testing.T) {
	list := `page   num  type   width height color comp bpc  enc interp  object ID x-ppi y-ppi size ratio
--------------------------------------------------------------------------------------------
   1     0 image    1714  2208  gray    1   8  jpeg   no         5  0   202   201  122K 3.3%
   1     1 smask    1714  2208  gray    1   8  image  no         6  0   202   201  1K 0.1%
`
	for in, want := range map[string]int{list: 202, "": 300, strings.Replace(list, "202", "600", 1): 300, strings.Replace(list, "202", "96", 1): 200} {
		if got := imageDPI(in); got != want {
			t.Errorf("imageDPI = %d, want %d for\n%s", got, want, in)
		}
	}
}
