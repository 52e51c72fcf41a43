package extract

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// numberFormat records which decimal separator a document uses. Most
// numbers say so themselves (1.234,56), but "1.250" does not, and only the
// rest of the document can tell whether it is 1250 or 1.25.
type numberFormat struct {
	decimalComma bool
}

// Guarded because they run on every cell, most of which hold no comma or
// no point.
var (
	reCommaDecimal = mustGuarded(`^\d{1,3}(\.\d{3})*,\d{1,2}$|^\d+,\d{1,2}$`, ",")
	rePointDecimal = mustGuarded(`^\d{1,3}(,\d{3})*\.\d{1,2}$|^\d+\.\d{1,2}$`, ".")
)

// guessNumberFormat votes over the cells that are unambiguous. A tie goes
// to preferComma, which callers set for semicolon CSVs, the export format of
// spreadsheets in comma-decimal locales.
func guessNumberFormat(rows []row, preferComma bool) numberFormat {
	comma, point := 0, 0
	for _, r := range rows {
		for _, c := range r.cells {
			s, _, ok := stripNumber(c.text)
			if !ok {
				continue
			}
			switch {
			case reCommaDecimal.MatchString(s):
				comma++
			case rePointDecimal.MatchString(s):
				point++
			}
		}
	}
	if comma == point {
		return numberFormat{decimalComma: preferComma}
	}
	return numberFormat{decimalComma: comma > point}
}

// reCurrencyAffix and reDigits specify stripCurrencyAffix and plainNumber,
// which replace them on every cell; the tests hold the two to them.
var (
	reCurrencyAffix = regexp.MustCompile(`^(?:US\$|[$€£¥]|(?:USD|EUR|GBP|CHF|JPY|CAD|AUD)\b)\s*|\s*(?:[$€£¥]|\b(?:USD|EUR|GBP|CHF|JPY|CAD|AUD))$`)
	reDigits        = regexp.MustCompile(`^\d[\d.,]*$`)
	reSpaceGroups   = mustGuarded(`^\d{1,3}( \d{3})+([.,]\d+)?$`, " ")
)

// stripCurrencyAffix is reCurrencyAffix.ReplaceAllString(s, ""), spelt
// out because it runs on every cell and the regexp tried every position of
// it for the suffix (profile of docket bench).
func stripCurrencyAffix(s string) string {
	rest := s
	if n := currencyPrefix(s); n > 0 {
		rest = strings.TrimLeft(s[n:], asciiSpace)
	}
	// The suffix cannot reach back into what the prefix took.
	if n := currencySuffix(s); n > 0 && n <= len(rest) {
		rest = strings.TrimRight(rest[:len(rest)-n], asciiSpace)
	}
	return rest
}

// asciiSpace is what \s matches in Go's regexps.
const asciiSpace = "\t\n\f\r "

var (
	currencySymbols = []string{"$", "€", "£", "¥"}
	affixCodes      = []string{"USD", "EUR", "GBP", "CHF", "JPY", "CAD", "AUD"}
)

// currencyPrefix is the length of the "US$", symbol or whole-word code that
// s begins with, or 0.
func currencyPrefix(s string) int {
	if strings.HasPrefix(s, "US$") {
		return 3
	}
	for _, sym := range currencySymbols {
		if strings.HasPrefix(s, sym) {
			return len(sym)
		}
	}
	for _, c := range affixCodes {
		if strings.HasPrefix(s, c) && (len(s) == 3 || !isWordByte(s[3])) {
			return 3
		}
	}
	return 0
}

// currencySuffix is the length of the symbol or whole-word code that s ends
// with, or 0.
func currencySuffix(s string) int {
	for _, sym := range currencySymbols {
		if strings.HasSuffix(s, sym) {
			return len(sym)
		}
	}
	for _, c := range affixCodes {
		if strings.HasSuffix(s, c) && (len(s) == 3 || !isWordByte(s[len(s)-4])) {
			return 3
		}
	}
	return 0
}

// stripNumber removes sign, currency and thousands spacing from s and
// returns the bare digits and separators, whether the value is negative, and
// whether what is left looks like a number at all.
func stripNumber(s string) (string, bool, bool) {
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		neg, s = true, strings.TrimSpace(s[1:len(s)-1])
	}
	// Accounting credit marks: "1,200.00 CR".
	if t, ok := strings.CutSuffix(s, " CR"); ok {
		neg, s = !neg, strings.TrimSpace(t)
	} else if t, ok := strings.CutSuffix(s, " Cr"); ok {
		neg, s = !neg, strings.TrimSpace(t)
	}
	for i := 0; i < 3; i++ {
		before := s
		for _, m := range []string{"-", "−", "–"} {
			if strings.HasPrefix(s, m) {
				neg, s = !neg, strings.TrimSpace(s[len(m):])
			} else if strings.HasSuffix(s, m) {
				neg, s = !neg, strings.TrimSpace(s[:len(s)-len(m)])
			}
		}
		s = strings.TrimSpace(stripCurrencyAffix(s))
		if s == before {
			break
		}
	}
	s = groupSpaces.Replace(s)
	if reSpaceGroups.MatchString(s) {
		s = strings.ReplaceAll(s, " ", "")
	}
	if !plainNumber(s) {
		return "", false, false
	}
	// A scan's table rule or a speck beside an amount comes out of OCR as
	// one more separator ("149,70." or "21,00,"). After a complete decimal
	// part it cannot be a separator of the number, so it is dropped; a bare
	// "35." stays ambiguous and is still refused by parseNumber.
	if strayTrailingSeparator(s) {
		s = s[:len(s)-1]
	}
	return s, neg, true
}

// plainNumber is reDigits.MatchString(s): a digit, then only digits and
// separators.
func plainNumber(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && c != '.' && c != ',' {
			return false
		}
	}
	return true
}

// strayTrailingSeparator reports whether s (digits and separators only) ends
// in "d.dd" or "d,dd" followed by one more separator. Checked by hand rather
// than by a regexp because it runs on every number candidate.
func strayTrailingSeparator(s string) bool {
	n := len(s)
	if n < 5 {
		return false
	}
	sep := func(c byte) bool { return c == '.' || c == ',' }
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	return sep(s[n-1]) && digit(s[n-2]) && digit(s[n-3]) && sep(s[n-4]) && digit(s[n-5])
}

// Built once: a Replacer builds its tables on first use, which cost more
// than the replacing itself when made per number (profile of docket bench).
var (
	groupSpaces = strings.NewReplacer("'", "", "\u00a0", "", "\u202f", "", "\u2009", "")
	separators  = strings.NewReplacer(".", "", ",", "")
)

// parseNumber reads a price, quantity or amount in either locale style:
// 1,234.56, 1.234,56, 1 234,56, 6,5, -$84.00, (12.00), 35.00- and the like.
// Dates, percentages and anything with words in it are rejected.
func parseNumber(s string, nf numberFormat) (float64, bool) {
	digits, neg, ok := stripNumber(s)
	if !ok {
		return 0, false
	}
	dots, commas := strings.Count(digits, "."), strings.Count(digits, ",")
	var intPart, frac string
	switch {
	case dots > 0 && commas > 0:
		dec := strings.LastIndexAny(digits, ".,")
		intPart, frac = digits[:dec], digits[dec+1:]
		if strings.ContainsRune(frac, '.') || strings.ContainsRune(frac, ',') {
			return 0, false
		}
	case dots+commas == 0:
		intPart = digits
	case dots+commas > 1:
		intPart = digits // only thousands separators, e.g. 1.234.567
	default:
		sep := strings.IndexAny(digits, ".,")
		after := digits[sep+1:]
		isComma := digits[sep] == ','
		thousands := len(after) == 3 && digits[:sep] != "0" && (isComma != nf.decimalComma)
		if thousands {
			intPart = digits
		} else {
			intPart, frac = digits[:sep], after
		}
	}
	if !validGroups(intPart) || frac == "" && strings.HasSuffix(digits, ".") || strings.HasSuffix(digits, ",") {
		return 0, false
	}
	clean := separators.Replace(intPart)
	if frac != "" {
		clean += "." + frac
	}
	v, err := strconv.ParseFloat(clean, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// validGroups accepts "1234", "1,234" and "1.234.567" but not "12.34.5",
// which is more likely a date or a version than a number.
func validGroups(s string) bool {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == ',' })
	if len(parts) == 0 {
		return false
	}
	if len(parts) == 1 {
		return !strings.ContainsAny(s, ".,")
	}
	if len(parts[0]) > 3 || len(parts[0]) == 0 {
		return false
	}
	for _, p := range parts[1:] {
		if len(p) != 3 {
			return false
		}
	}
	return strings.Count(s, ".") == 0 || strings.Count(s, ",") == 0
}

// reQtyUnit allows a short unit after a quantity ("6,5 Std", "3 pcs"), which
// only makes sense in a column already known to hold quantities.
var reQtyUnit = regexp.MustCompile(`^(.*\d)\s*[\p{L}.]{1,5}$`)

func parseQuantity(s string, nf numberFormat) (float64, bool) {
	if v, ok := parseNumber(s, nf); ok {
		return v, true
	}
	if m := reQtyUnit.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		return parseNumber(m[1], nf)
	}
	return 0, false
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// consistent reports whether qty × price equals amount to the cent, with a
// little slack for documents that round unit prices.
func consistent(qty, price, amount float64) bool {
	d := math.Abs(qty*price - amount)
	return d < 0.011 || d <= math.Abs(amount)*0.005
}
