package extract

import (
	"slices"
	"strings"
	"testing"
)

// The fast paths in front of the regexps, or in their place, must give what
// the regexps give for every string: these tests hold them to the regexps.

func checkNumberRegexps(t *testing.T, s string) {
	t.Helper()
	if got, want := stripCurrencyAffix(s), reCurrencyAffix.ReplaceAllString(s, ""); got != want {
		t.Errorf("stripCurrencyAffix(%q) = %q, regexp %q", s, got, want)
	}
	if got, want := plainNumber(s), reDigits.MatchString(s); got != want {
		t.Errorf("plainNumber(%q) = %v, regexp %v", s, got, want)
	}
	for name, g := range map[string]guardedRegexp{
		"reCommaDecimal": reCommaDecimal, "rePointDecimal": rePointDecimal, "reSpaceGroups": reSpaceGroups,
	} {
		if got, want := g.MatchString(s), g.re.MatchString(s); got != want {
			t.Errorf("%s.MatchString(%q) = %v, regexp %v", name, s, got, want)
		}
	}
}

func checkCurrencyScan(t *testing.T, s string) {
	t.Helper()
	if got, want := currencyCodes(s), reCode.FindAllString(s, -1); !slices.Equal(got, want) {
		t.Errorf("currencyCodes(%q) = %q, regexp %q", s, got, want)
	}
	var want []string
	for _, m := range reDollar.FindAllStringSubmatch(s, -1) {
		want = append(want, m[1])
	}
	if got := dollarPrefixes(s); !slices.Equal(got, want) {
		t.Errorf("dollarPrefixes(%q) = %q, regexp %q", s, got, want)
	}
}

var headerRegexps = map[string]guardedRegexp{
	"reHeadNoise": reHeadNoise, "reSKU": reSKU, "reAmount": reAmount, "rePrice": rePrice,
	"reQty": reQty, "reDesc": reDesc, "reOther": reOther,
}

// checkHeaderRegexps tries s as it comes and lowered, as classify sees it.
func checkHeaderRegexps(t *testing.T, s string) {
	t.Helper()
	for _, in := range []string{s, strings.ToLower(s)} {
		if got, want := reHeadNoise.ReplaceAllString(in, " "), reHeadNoise.re.ReplaceAllString(in, " "); got != want {
			t.Errorf("reHeadNoise.ReplaceAllString(%q) = %q, regexp %q", in, got, want)
		}
		for name, g := range headerRegexps {
			if got, want := g.MatchString(in), g.re.MatchString(in); got != want {
				t.Errorf("%s.MatchString(%q) = %v, regexp %v", name, in, got, want)
			}
		}
	}
}

// fastPathWords are the literals of the regexps and their near misses.
var fastPathWords = []string{
	"", "USD", "EUR", "GBP", "CHF", "JPY", "CAD", "AUD", "NZD", "SEK", "NOK", "DKK", "PLN",
	"CZK", "HUF", "INR", "CNY", "HKD", "SGD", "ZAR", "MXN", "BRL", "US", "USDX", "XUSD", "XUSDX",
	"usd", "US$", "NZ$", "HK$", "A$", "C$", "S$", "Z$", "K$", "AS$", "NZNZ$", "$$", "S$$", "$",
	"€", "£", "¥", "₹", "¬", ":", "#", "%", "(", ")", "(net)", "(excl. vat)", "45.00", "1 234,56",
	"eur", "gbp", "chf", "excl", "incl", "net", "netto", "brutto", "net.", "sku", "code", "no", "nr",
	"nº", "no.", "number", "pos", "position", "ref", "art", "nummer", "artikel-nr", "artikelnr",
	"part", "item #", "total", "amount", "betrag", "gesamt", "montant", "summe", "sum", "extended",
	"line value", "value", "price", "rate", "cost", "preis", "prix", "p.u.", "p.u", "pu", "pu.",
	"p.", "each", "unit value", "tarif", "qty", "qty.", "qté", "quantity", "quantité", "quantities",
	"menge", "anzahl", "hours", "hrs", "units", "pcs", "stück", "stk", "nb", "cantidad",
	"description", "item", "items", "item name", "service", "services", "product", "products",
	"article", "articles", "bezeichnung", "beschreibung", "leistung", "artikel", "designation",
	"désignation", "libelle", "libellé", "detail", "details", "particulars", "descripción",
	"concepto", "unit", "units of measure", "uom", "einheit", "unité", "period", "date", "datum",
	"tax", "vat", "mwst", "ust", "tva", "disc", "disc.", "discount", "Unit Price", "Line Total",
	"0", "12", "1 234", "1 234 567,5", "12 34", "1,234.56", "1.234,56", "12,5", "12.5", "1.",
	",5", ".5", "1,2,3", "١٢", "１２", "1 234.", "1234,567",
}

// fastPathEdges go either side of a word: word characters, non-word ASCII,
// multi-byte and invalid UTF-8, and the letters that precede a '$'.
var fastPathEdges = []string{"", " ", "\t", "\n", "\v", "\u00a0", "x", "X", "_", "1", "é", "\xff", "\xe2", ".", "-", "$", "A", "N", "NZ", "H", "(", ")"}

// fastPathCases are the words between every two edges, and a few more.
func fastPathCases() []string {
	var cases []string
	for _, w := range fastPathWords {
		for _, l := range fastPathEdges {
			for _, r := range fastPathEdges {
				cases = append(cases, l+w+r)
			}
		}
	}
	return append(cases,
		"Total: 45.00 USD", "USD 45.00", "45.00 USD ", "  $ 12.00", "12.00 $", "US$ 5", "5 US$",
		"EUR/USD", "USD,EUR;GBP", "USD_EUR", "USDEUR", "1USD", "USD1", "ÉUSD", "USDé",
		"Paid NZ$ 20 and HK$30 and A$1, C$2, S$3, $4", "NZHK$", "HKNZ$", "ANZ$", "SNZ$", "NZ$NZ$",
		"INVOICE #7\nBill to: Bench Co\n\nDescription Qty Unit Price Amount\nWidget 2 10.50 21.00\n",
		"price (eur)", "amount excl. vat", "unit price: net", "pos.", "art.-nr", "nº.", "total price",
	)
}

func TestNumberRegexps(t *testing.T) {
	t.Parallel()
	for _, s := range fastPathCases() {
		checkNumberRegexps(t, s)
	}
}

func TestCurrencyScan(t *testing.T) {
	t.Parallel()
	for _, s := range fastPathCases() {
		checkCurrencyScan(t, s)
	}
}

func TestHeaderRegexps(t *testing.T) {
	t.Parallel()
	for _, s := range fastPathCases() {
		checkHeaderRegexps(t, s)
	}
}

func addFastPathSeeds(f *testing.F) {
	for _, w := range fastPathWords {
		f.Add(w)
		f.Add(" " + w + "$")
	}
	f.Add("Total: 45.00 USD")
	f.Add("Paid NZ$ 20 and HK$30 and A$1, C$2, S$3, $4")
}

func FuzzNumberRegexps(f *testing.F) {
	addFastPathSeeds(f)
	f.Fuzz(checkNumberRegexps)
}

func FuzzCurrencyScan(f *testing.F) {
	addFastPathSeeds(f)
	f.Fuzz(checkCurrencyScan)
}

func FuzzHeaderRegexps(f *testing.F) {
	addFastPathSeeds(f)
	f.Fuzz(checkHeaderRegexps)
}
