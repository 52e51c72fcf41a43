package extract

import "testing"

func TestParseNumber(t *testing.T) {
	point, comma := numberFormat{}, numberFormat{decimalComma: true}
	tests := []struct {
		in   string
		nf   numberFormat
		want float64
		ok   bool
	}{
		{"1,234.56", point, 1234.56, true},
		{"1.234,56", point, 1234.56, true},
		{"1.234,56", comma, 1234.56, true},
		{"1 234,56", comma, 1234.56, true},
		{"1'234.50", point, 1234.5, true},
		{"6,5", point, 6.5, true},
		{"3,5", comma, 3.5, true},
		{"0.023", point, 0.023, true},
		{"0.023", comma, 0.023, true},
		{"1,250", point, 1250, true},
		{"1.250", comma, 1250, true},
		{"1.250", point, 1.25, true},
		{"1.234.567", comma, 1234567, true},
		{"12", point, 12, true},
		{"$378.00", point, 378, true},
		{"£1,250.00", point, 1250, true},
		{"2.482,90 €", comma, 2482.9, true},
		{"EUR 45,00", comma, 45, true},
		{"-$84.00", point, -84, true},
		{"$-84.00", point, -84, true},
		{"-£2,000.00", point, -2000, true},
		{"(12.50)", point, -12.5, true},
		{"35.00-", point, -35, true},
		{"1,200.00 CR", point, -1200, true},
		{"CR", point, 0, false},
		{"−7,50", comma, -7.5, true},
		{"-2", point, -2, true},
		{"15.08.2024", comma, 0, false},
		{"02/14/2025", point, 0, false},
		{"19 %", point, 0, false},
		{"08:00-18:00", point, 0, false},
		{"BP-10231", point, 0, false},
		{"12.34.5", point, 0, false},
		// OCR noise: one stray separator after a complete decimal amount.
		{"149,70.", comma, 149.7, true},
		{"21,00,", comma, 21, true},
		{"1,234.56.", point, 1234.56, true},
		{"35.", point, 0, false},
		{"35,", comma, 0, false},
		{"1.5.", point, 0, false},
		{"", point, 0, false},
		{"Total", point, 0, false},
		{"12.", point, 0, false},
	}
	for _, tc := range tests {
		got, ok := parseNumber(tc.in, tc.nf)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseNumber(%q, comma=%v) = %v, %v; want %v, %v", tc.in, tc.nf.decimalComma, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseQuantityUnits(t *testing.T) {
	for in, want := range map[string]float64{"6,5 Std": 6.5, "3 pcs": 3, "12.5 h": 12.5, "4": 4} {
		if got, ok := parseQuantity(in, numberFormat{}); !ok || got != want {
			t.Errorf("parseQuantity(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := parseQuantity("Stk", numberFormat{}); ok {
		t.Error("a unit alone is not a quantity")
	}
}

func TestGuessNumberFormat(t *testing.T) {
	if !guessNumberFormat(textRows("a  1.450,00  2.900,00\nb  85,00  1.190,00"), false).decimalComma {
		t.Error("German amounts should select decimal commas")
	}
	if guessNumberFormat(textRows("a  1,450.00  2,900.00"), true).decimalComma {
		t.Error("English amounts should win over the semicolon hint")
	}
}

func TestDetectCurrency(t *testing.T) {
	for text, want := range map[string]string{
		"Total $5.00":             "USD",
		"Summe 5,00 €":            "EUR",
		"Price EUR  Total EUR":    "EUR",
		"£3.40 and £1.90":         "GBP",
		"TOTAL DUE (USD): 796.85": "USD",
		"Total C$12.00 C$3.00":    "CAD",
		"no money here":           "",
	} {
		if got := detectCurrency(text); got != want {
			t.Errorf("detectCurrency(%q) = %q, want %q", text, got, want)
		}
	}
}
