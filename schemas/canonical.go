package schemas

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/pkg/crc64"
)

// CanonicalForm returns the Parsing Canonical Form of s as the Avro
// specification defines it: primitives in their simple form, full names,
// only the attributes type, name, fields, symbols, items, values and size, in
// that order, no whitespace, and named types written out at their first
// occurrence and referenced by full name afterwards.
//
// It exists because hamba/avro's Schema.String, which its own fingerprints
// hash, keeps logicalType (e.g. {"type":"long","logicalType":"timestamp-micros"})
// where the specification strips it. Every event schema contains a
// timestamp-micros through Meta, so hamba's built-in fingerprints would not
// match those computed by other Avro implementations (Java's
// SchemaNormalization, for one).
func CanonicalForm(s avro.Schema) (string, error) {
	var b strings.Builder
	if err := writeCanonical(&b, s, map[string]bool{}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Fingerprint returns the CRC-64-AVRO (Rabin) fingerprint of the Parsing
// Canonical Form of s, as a number. Avro's single-object encoding carries it
// as 8 little-endian bytes; Java's SchemaNormalization.parsingFingerprint64
// returns the same value as a signed long.
func Fingerprint(s avro.Schema) (uint64, error) {
	pcf, err := CanonicalForm(s)
	if err != nil {
		return 0, err
	}
	h := crc64.New()
	_, _ = h.Write([]byte(pcf))
	return h.Sum64(), nil
}

func writeCanonical(b *strings.Builder, s avro.Schema, seen map[string]bool) error {
	switch t := s.(type) {
	case *avro.NullSchema:
		b.WriteString(`"null"`)
	case *avro.PrimitiveSchema:
		// [STRIP]: a logical type does not change how the data is parsed.
		b.WriteString(strconv.Quote(string(t.Type())))
	case *avro.RefSchema:
		return writeCanonical(b, t.Schema(), seen)
	case *avro.RecordSchema:
		if writeSeen(b, t.FullName(), seen) {
			return nil
		}
		typ := "record"
		if t.IsError() {
			typ = "error"
		}
		b.WriteString(`{"name":` + strconv.Quote(t.FullName()) + `,"type":"` + typ + `","fields":[`)
		for i, f := range t.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":` + strconv.Quote(f.Name()) + `,"type":`)
			if err := writeCanonical(b, f.Type(), seen); err != nil {
				return err
			}
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
	case *avro.EnumSchema:
		if writeSeen(b, t.FullName(), seen) {
			return nil
		}
		b.WriteString(`{"name":` + strconv.Quote(t.FullName()) + `,"type":"enum","symbols":[`)
		for i, sym := range t.Symbols() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(sym))
		}
		b.WriteString(`]}`)
	case *avro.FixedSchema:
		if writeSeen(b, t.FullName(), seen) {
			return nil
		}
		b.WriteString(`{"name":` + strconv.Quote(t.FullName()) + `,"type":"fixed","size":` + strconv.Itoa(t.Size()) + `}`)
	case *avro.ArraySchema:
		b.WriteString(`{"type":"array","items":`)
		if err := writeCanonical(b, t.Items(), seen); err != nil {
			return err
		}
		b.WriteByte('}')
	case *avro.MapSchema:
		b.WriteString(`{"type":"map","values":`)
		if err := writeCanonical(b, t.Values(), seen); err != nil {
			return err
		}
		b.WriteByte('}')
	case *avro.UnionSchema:
		b.WriteByte('[')
		for i, u := range t.Types() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, u, seen); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		return fmt.Errorf("schemas: canonical form of %T is not supported", s)
	}
	return nil
}

// writeSeen writes a reference to a named type already written out and
// reports true, or marks the name as written and reports false.
func writeSeen(b *strings.Builder, fullName string, seen map[string]bool) bool {
	if seen[fullName] {
		b.WriteString(strconv.Quote(fullName))
		return true
	}
	seen[fullName] = true
	return false
}
