package extract

import (
	"regexp"
	"slices"
	"strings"
)

// reCode and reDollar specify currencyCodes and dollarPrefixes, which
// replace them because they ran over the whole text of every document
// (profile of docket bench); the tests hold the two to them.
var (
	reCode   = regexp.MustCompile(`\b(USD|EUR|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|HUF|INR|CNY|HKD|SGD|ZAR|MXN|BRL)\b`)
	symbols  = map[string]string{"€": "EUR", "£": "GBP", "$": "USD", "¥": "JPY", "₹": "INR"}
	reDollar = regexp.MustCompile(`(A|C|NZ|HK|S)\$`)
	dollarOf = map[string]string{"A": "AUD", "C": "CAD", "NZ": "NZD", "HK": "HKD", "S": "SGD"}
)

// currencies lists the codes of reCode, in the order that breaks a tie.
var currencies = []string{"USD", "EUR", "GBP", "CHF", "JPY", "CAD", "AUD", "NZD", "SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "INR", "CNY", "HKD", "SGD", "ZAR", "MXN", "BRL"}

// detectCurrency votes over currency codes and symbols in the text. A
// written code counts more than a symbol because "$" alone is used by a
// dozen currencies while "USD" is not ambiguous.
func detectCurrency(text string) string {
	votes := map[string]int{}
	for _, m := range currencyCodes(text) {
		votes[m] += 3
	}
	for sym, code := range symbols {
		votes[code] += strings.Count(text, sym)
	}
	for _, p := range dollarPrefixes(text) {
		votes["USD"]--
		votes[dollarOf[p]]++
	}
	best, n := "", 0
	for _, code := range currencies {
		if votes[code] > n {
			best, n = code, votes[code]
		}
	}
	return best
}

// currencyCodes returns reCode.FindAllString(text, -1). Its \b is an ASCII
// word boundary, so a byte test decides it: a byte of a multi-byte or
// invalid rune is not a word character. There is no boundary inside a code,
// so no two matches overlap and every position can be tried.
func currencyCodes(text string) []string {
	var codes []string
	for i := 0; i+3 <= len(text); i++ {
		// Every code starts with a capital: a cheap test that rules out most.
		if text[i] < 'A' || text[i] > 'Z' || i > 0 && isWordByte(text[i-1]) || i+3 < len(text) && isWordByte(text[i+3]) {
			continue
		}
		if c := text[i : i+3]; slices.Contains(currencies, c) {
			codes = append(codes, c)
		}
	}
	return codes
}

// dollarPrefixes returns the group of each match of reDollar, as m[1] of
// FindAllStringSubmatch: before a '$', "NZ" or "HK" is the leftmost match,
// else "A", "C" or "S". None of these letters is a '$', so a match never
// reaches back into the one before.
func dollarPrefixes(text string) []string {
	var prefixes []string
	for i := 0; i < len(text); i++ {
		if text[i] != '$' {
			continue
		}
		switch {
		case i >= 2 && (text[i-2:i] == "NZ" || text[i-2:i] == "HK"):
			prefixes = append(prefixes, text[i-2:i])
		case i >= 1 && strings.IndexByte("ACS", text[i-1]) >= 0:
			prefixes = append(prefixes, text[i-1:i])
		}
	}
	return prefixes
}
