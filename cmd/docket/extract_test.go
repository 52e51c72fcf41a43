package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/extract/fixture"
)

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCLI runs a docket command in-process and returns stdout and the error.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), err
}

const cliInvoice = `ACME GmbH — Rechnung 2024-118
Pos  Bezeichnung               Menge   Einzelpreis    Gesamt
1    Schrauben M8, verzinkt       40          0,35     14,00
2    Montage vor Ort              2,5        68,00    170,00
                                        Zwischensumme   184,00
                                        MwSt 19 %        34,96
                                        Gesamtbetrag EUR 218,96
`

func TestExtractCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := runCLI(t, "extract", writeFile(t, dir, "upload.bin", []byte(cliInvoice)))
	if err != nil {
		t.Fatalf("extract: %v\n%s", err, out)
	}
	var got extractOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	want := []extractedItem{{"Schrauben M8, verzinkt", 40, 0.35, 14}, {"Montage vor Ort", 2.5, 68, 170}}
	if got.ContentType != "text/plain" || got.NumPages != 1 || got.Currency == nil || *got.Currency != "EUR" ||
		len(got.LineItems) != 2 || got.LineItems[0] != want[0] || got.LineItems[1] != want[1] {
		t.Errorf("got %s", out)
	}
	// The keys are the documented ones, currency null for a non-invoice.
	out, err = runCLI(t, "extract", writeFile(t, dir, "letter.txt", []byte("Dear Sir,\nthank you for your order of 3 May.\n")))
	if err != nil || !strings.Contains(out, `"currency": null`) || !strings.Contains(out, `"line_items": []`) {
		t.Errorf("letter: %v %s", err, out)
	}
}

func TestExtractCommandFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	threePages := fixture.PDF(fixture.TextOp(50, 700, "one"), fixture.TextOp(50, 700, "two"), fixture.TextOp(50, 700, "three"))
	cases := []struct {
		name string
		args []string
		code string
	}{
		{"empty", []string{writeFile(t, dir, "empty.pdf", nil)}, "empty_document"},
		{"unsupported", []string{writeFile(t, dir, "x.exe", []byte("\x7fELF\x02\x01\x01\x00\x00"))}, "unsupported_format"},
		{"truncated pdf", []string{writeFile(t, dir, "cut.pdf", threePages[:300])}, "corrupt_document"},
		{"page limit", []string{"--max-pages", "2", writeFile(t, dir, "three.pdf", threePages)}, "too_many_pages"},
		{"missing file", []string{filepath.Join(dir, "nope.pdf")}, "internal_error"},
	}
	for _, tc := range cases {
		out, err := runCLI(t, append([]string{"extract"}, tc.args...)...)
		var st exitStatus
		var e errorOutput
		if !errors.As(err, &st) || st != 1 || json.Unmarshal([]byte(out), &e) != nil || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s: err %v, output %s; want exit 1 with code %s", tc.name, err, out, tc.code)
		}
	}
	if _, err := runCLI(t, "extract"); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("no file: %v", err)
	}
	if _, err := runCLI(t, "extract", "--extractor", "ftp://x", "f"); err == nil {
		t.Error("a non-http extractor URL was accepted")
	}
}

// --extractor hands the document to a real HTTP service on loopback.
func TestExtractCommandRemote(t *testing.T) {
	t.Parallel()
	var gotType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ContentType string `json:"content_type"`
			Data        []byte `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || string(req.Data) != cliInvoice {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		gotType = req.ContentType
		w.Write([]byte(`{"currency":"CHF","line_items":[{"description":"From the model","quantity":1,"unit_price":9,"amount":9}]}`))
	}))
	defer srv.Close()
	out, err := runCLI(t, "extract", "--extractor", srv.URL, writeFile(t, t.TempDir(), "inv.txt", []byte(cliInvoice)))
	if err != nil || gotType != "text/plain" || !strings.Contains(out, `"From the model"`) || !strings.Contains(out, `"CHF"`) {
		t.Errorf("err %v, content type %q, output %s", err, gotType, out)
	}
}

func TestEvalCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte(cliInvoice))
	writeFile(t, dir, "a.expected.json", []byte(`{"file":"a.txt","content_type":"text/plain","num_pages":1,"currency":"EUR","outcome":"succeeded",
	 "line_items":[{"description":"Schrauben M8, verzinkt","quantity":40,"unit_price":0.35,"amount":14},
	               {"description":"Montage vor Ort","quantity":2.5,"unit_price":68,"amount":170},
	               {"description":"Anfahrt","quantity":1,"unit_price":30,"amount":30}]}`))
	writeFile(t, dir, "b.pdf", nil)
	writeFile(t, dir, "b.expected.json", []byte(`{"file":"b.pdf","content_type":"application/pdf","num_pages":0,"currency":null,"outcome":"failed","line_items":[]}`))
	writeFile(t, dir, "c.csv", []byte("Item,Qty,Price,Total\nPaper A4,3,4.00,12.00\n"))
	writeFile(t, dir, "c.expected.json", []byte(`{"file":"c.csv","content_type":"text/csv","num_pages":2,"currency":"USD","outcome":"succeeded",
	 "line_items":[{"description":"Paper A4","quantity":3,"unit_price":4,"amount":12}]}`))

	out, err := runCLI(t, "eval", dir)
	if err != nil {
		t.Fatal(err)
	}
	// 3 of 4 expected items found, none invented; c's page count is wrong
	// on purpose (2 expected), so page accuracy is 1/2; every outcome is right.
	for _, want := range []string{"precision 1.000  recall 0.750  F1 0.857", "page-count accuracy 50.0% (1/2)", "outcome accuracy 100.0% (3/3)", "1. c.csv", "2. a.txt"} {
		if !strings.Contains(out, want) {
			t.Errorf("eval output lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, "eval", "--json", dir)
	var rep evalReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Documents) != 3 || rep.Recall != 0.75 || len(rep.Worst) != 2 {
		t.Errorf("json: %v %s", err, out)
	}
	if _, err := runCLI(t, "eval", t.TempDir()); err == nil {
		t.Error("a folder without expected files should be an error")
	}
}
