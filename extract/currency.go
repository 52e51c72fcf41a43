package extract

import (
	"regexp"
	"strings"
)

var (
	reCode   = regexp.MustCompile(`\b(USD|EUR|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|HUF|INR|CNY|HKD|SGD|ZAR|MXN|BRL)\b`)
	symbols  = map[string]string{"€": "EUR", "£": "GBP", "$": "USD", "¥": "JPY", "₹": "INR"}
	reDollar = regexp.MustCompile(`(A|C|NZ|HK|S)\$`)
	dollarOf = map[string]string{"A": "AUD", "C": "CAD", "NZ": "NZD", "HK": "HKD", "S": "SGD"}
)

// detectCurrency votes over currency codes and symbols in the text. A
// written code counts more than a symbol because "$" alone is used by a
// dozen currencies while "USD" is not ambiguous.
func detectCurrency(text string) string {
	votes := map[string]int{}
	for _, m := range reCode.FindAllString(text, -1) {
		votes[m] += 3
	}
	for sym, code := range symbols {
		votes[code] += strings.Count(text, sym)
	}
	for _, m := range reDollar.FindAllStringSubmatch(text, -1) {
		votes["USD"]--
		votes[dollarOf[m[1]]]++
	}
	best, n := "", 0
	for _, code := range []string{"USD", "EUR", "GBP", "CHF", "JPY", "CAD", "AUD", "NZD", "SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "INR", "CNY", "HKD", "SGD", "ZAR", "MXN", "BRL"} {
		if votes[code] > n {
			best, n = code, votes[code]
		}
	}
	return best
}
