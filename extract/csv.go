package extract

import (
	"encoding/csv"
	"strings"
)

// csvRows parses CSV text into grid rows. Quoted fields may hold commas and
// line breaks; the csv package takes care of both, so a multi-line
// description arrives as one field and only needs its spaces collapsed.
// Records that fail to parse end the table rather than the document: an
// export with a broken footer still has good rows above it.
func csvRows(text string) []row {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = csvDelimiter(text)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.TrimLeadingSpace = true
	var rows []row
	for {
		rec, err := r.Read()
		if err != nil {
			break
		}
		rows = append(rows, gridRow(rec))
	}
	return rows
}
