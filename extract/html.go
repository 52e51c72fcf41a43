package extract

import (
	"html"
	"regexp"
	"strconv"
	"strings"
)

var (
	reDropBlocks = regexp.MustCompile(`(?is)<(script|style|head|template|noscript)\b.*?</(script|style|head|template|noscript)\s*>|<!--.*?-->|<![^>]*>|<\?[^>]*>`)
	reTag        = regexp.MustCompile(`(?s)<(/?)([a-zA-Z][a-zA-Z0-9]*)([^>]*)>`)
	reColspan    = regexp.MustCompile(`(?i)colspan\s*=\s*["']?(\d+)`)
)

// blockTags start a new line outside table cells.
var blockTags = map[string]bool{
	"p": true, "div": true, "br": true, "h1": true, "h2": true, "h3": true, "h4": true,
	"h5": true, "h6": true, "li": true, "ul": true, "ol": true, "table": true,
	"section": true, "article": true, "header": true, "footer": true, "hr": true,
	"address": true, "blockquote": true, "pre": true, "dt": true, "dd": true,
}

// htmlToText flattens HTML into the line-and-cell form the table reader
// understands: every <tr> becomes one line with its cells separated by
// tabs (a colspan adds empty cells, so columns stay aligned with the
// header), and anything inside a cell, <br> included, stays in that cell
// joined by spaces, which is how a printed invoice wraps a description.
// The standard library has no HTML parser and invoices need none: tags are
// only ever used here as separators.
func htmlToText(src string) string {
	src = reDropBlocks.ReplaceAllString(src, " ")
	var (
		out    strings.Builder
		line   strings.Builder
		cells  []string
		cur    strings.Builder
		inRow  bool
		inCell bool
		span   int
	)
	flushLine := func() {
		if t := collapseSpace(line.String()); t != "" {
			out.WriteString(t)
			out.WriteByte('\n')
		}
		line.Reset()
	}
	closeCell := func() {
		if inCell {
			cells = append(cells, collapseSpace(html.UnescapeString(cur.String())))
			for i := 1; i < span; i++ {
				cells = append(cells, "")
			}
			cur.Reset()
			inCell = false
		}
	}
	closeRow := func() {
		closeCell()
		if inRow && len(cells) > 0 {
			flushLine()
			out.WriteString(strings.Join(cells, "\t"))
			out.WriteByte('\n')
		}
		cells, inRow = nil, false
	}
	pos := 0
	for _, m := range reTag.FindAllStringSubmatchIndex(src, -1) {
		text := src[pos:m[0]]
		pos = m[1]
		if inCell {
			cur.WriteString(text)
		} else if !inRow {
			line.WriteString(html.UnescapeString(text))
		}
		closing := src[m[2]:m[3]] == "/"
		name := strings.ToLower(src[m[4]:m[5]])
		attrs := src[m[6]:m[7]]
		switch {
		case name == "tr" && !closing:
			closeRow()
			inRow = true
		case name == "tr" || name == "table" || name == "thead" || name == "tbody" || name == "tfoot":
			closeRow()
			flushLine()
		case (name == "td" || name == "th") && !closing:
			closeCell()
			if !inRow {
				inRow = true
			}
			inCell, span = true, 1
			if cm := reColspan.FindStringSubmatch(attrs); cm != nil {
				if n, err := strconv.Atoi(cm[1]); err == nil && n > 1 && n < 50 {
					span = n
				}
			}
		case name == "td" || name == "th":
			closeCell()
		case inCell:
			cur.WriteByte(' ')
		case blockTags[name]:
			flushLine()
		}
	}
	if inCell {
		cur.WriteString(src[pos:])
	} else {
		line.WriteString(html.UnescapeString(src[pos:]))
	}
	closeRow()
	flushLine()
	return out.String()
}
