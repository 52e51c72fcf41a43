package extract

import (
	"regexp"
	"strings"
)

// guardedRegexp is a regexp with literals of which every match holds one:
// a string holding none is turned away by strings.Contains, far cheaper
// than running the regexp.
type guardedRegexp struct {
	re      *regexp.Regexp
	needles []string
}

func mustGuarded(expr string, needles ...string) guardedRegexp {
	return guardedRegexp{regexp.MustCompile(expr), needles}
}

func (g guardedRegexp) mayMatch(s string) bool {
	for _, n := range g.needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

func (g guardedRegexp) MatchString(s string) bool {
	return g.mayMatch(s) && g.re.MatchString(s)
}

func (g guardedRegexp) ReplaceAllString(s, repl string) string {
	if !g.mayMatch(s) {
		return s
	}
	return g.re.ReplaceAllString(s, repl)
}

// isWordByte reports whether c is a word character to \b in Go's regexps.
// It decides for whole runes too: the bytes of a multi-byte or invalid rune
// are all non-ASCII, and such runes are not word characters.
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}
