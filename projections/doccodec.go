package projections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/docket/docket/domain"
)

// The document view is the value the fold rewrites most and the read path
// serves most, so it has a binary encoding of its own: JSON encode and
// decode of it were a fifth of the apply path's CPU on the bench's log, and
// its field names more than half of its bytes, which Pebble then flushes
// and compacts again and again. The encoding is the fields in declaration
// order, after a version byte; a change to domain.Document changes
// docCodecVersion and views in an older layout are rebuilt
// (historyFormat). TestDocumentCodecCoversEveryField fails when a field is
// added without it.
//
//	strings, []byte   uvarint length, bytes
//	ints              zig-zag varint
//	bools             one byte
//	floats            8 bytes, little endian
//	times             0 (zero), or 1, varint Unix seconds, uvarint nanoseconds (read back in UTC)
//	pointers          0 (nil), or 1 and the value
//	slices            0 (nil), or uvarint count+1 and the elements (nil and empty differ: a
//	                  document that succeeded without line items has an empty list)
const docCodecVersion = 1

// errViewCodec is a document or batch view this build cannot read.
var errViewCodec = errors.New("projections: malformed view")

func encodeDocument(d *domain.Document) []byte { return appendDocument(make([]byte, 0, 256), d) }

// appendDocument appends d's encoding to b.
func appendDocument(b []byte, d *domain.Document) []byte {
	b = append(b, docCodecVersion)
	b = appendStrings(b, d.ID, d.OrgID, d.BatchName, d.FileName, d.ContentType)
	b = binary.AppendVarint(b, d.Size)
	b = appendStrings(b, d.BlobKey, d.Reference, string(d.Status), d.Target)
	b = binary.AppendVarint(b, int64(d.Attempt))
	b = appendStrings(b, d.ClaimID)
	b = appendStringSlice(b, d.JobIDs)
	b = binary.AppendVarint(b, int64(d.Pages))
	b = binary.AppendVarint(b, int64(d.TextChars))
	b = appendStrings(b, d.Currency)
	b = appendCount(b, len(d.LineItems), d.LineItems == nil)
	for _, li := range d.LineItems {
		b = appendStrings(b, li.Description)
		b = appendFloats(b, li.Quantity, li.UnitPrice, li.Amount)
	}
	b = appendError(b, d.Error)
	b = appendBool(b, d.BatchDeleted)
	b = appendBool(b, d.Pending != nil)
	if d.Pending != nil {
		b = appendStrings(b, d.Pending.Phase)
		b = appendStringSlice(b, d.Pending.JobIDs)
	}
	b = appendCount(b, len(d.Runs), d.Runs == nil)
	for _, r := range d.Runs {
		b = binary.AppendVarint(b, int64(r.Attempt))
		b = appendStrings(b, string(r.Status))
		b = binary.AppendVarint(b, int64(r.Pages))
		b = appendError(b, r.Error)
		b = appendTimes(b, r.CreatedAt, r.StartedAt, r.CompletedAt)
	}
	return appendTimes(b, d.CreatedAt, d.QueuedAt, d.StartedAt, d.CompletedAt)
}

func decodeDocument(val []byte, d *domain.Document) error {
	r := docReader{b: val}
	if v := r.byte(); v != docCodecVersion {
		return fmt.Errorf("%w: version %d", errViewCodec, v)
	}
	*d = domain.Document{}
	d.ID, d.OrgID, d.BatchName, d.FileName, d.ContentType = r.str(), r.str(), r.str(), r.str(), r.str()
	d.Size = r.varint()
	d.BlobKey, d.Reference, d.Status, d.Target = r.str(), r.str(), domain.Status(r.str()), r.str()
	d.Attempt = int(r.varint())
	d.ClaimID = r.str()
	d.JobIDs = r.strs()
	d.Pages, d.TextChars = int(r.varint()), int(r.varint())
	d.Currency = r.str()
	if n := r.count(); n >= 0 {
		d.LineItems = make([]domain.LineItem, n)
		for i := range d.LineItems {
			d.LineItems[i] = domain.LineItem{Description: r.str(), Quantity: r.float(), UnitPrice: r.float(), Amount: r.float()}
		}
	}
	d.Error = r.perr()
	d.BatchDeleted = r.bool()
	if r.bool() {
		d.Pending = &domain.PendingRun{Phase: r.str(), JobIDs: r.strs()}
	}
	if n := r.count(); n >= 0 {
		d.Runs = make([]domain.Run, n)
		for i := range d.Runs {
			d.Runs[i] = domain.Run{Attempt: int(r.varint()), Status: domain.JobStatus(r.str()), Pages: int(r.varint()), Error: r.perr(),
				CreatedAt: r.time(), StartedAt: r.time(), CompletedAt: r.time()}
		}
	}
	d.CreatedAt, d.QueuedAt, d.StartedAt, d.CompletedAt = r.time(), r.time(), r.time(), r.time()
	return r.finish()
}

func appendStrings(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func appendStringSlice(b []byte, ss []string) []byte {
	return appendStrings(appendCount(b, len(ss), ss == nil), ss...)
}

func appendCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendFloats(b []byte, fs ...float64) []byte {
	for _, f := range fs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendError(b []byte, e *domain.ProcessingError) []byte {
	if e == nil {
		return append(b, 0)
	}
	b = appendStrings(append(b, 1), e.Code, e.Message, e.Phase)
	return appendBool(b, e.Retryable)
}

func appendTimes(b []byte, ts ...time.Time) []byte {
	for _, t := range ts {
		if t.IsZero() {
			b = append(b, 0)
			continue
		}
		b = binary.AppendVarint(append(b, 1), t.Unix())
		b = binary.AppendUvarint(b, uint64(t.Nanosecond()))
	}
	return b
}

// docReader reads what encodeDocument and encodeBatch wrote; the first
// problem sticks in err and every later read returns a zero value.
type docReader struct {
	b   []byte
	err error
}

func (r *docReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated at %s", errViewCodec, what)
	}
	r.b = nil
}

func (r *docReader) byte() byte {
	if len(r.b) < 1 {
		r.fail("a byte")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// finish is the reader's verdict on a whole value: its first problem, or
// bytes left over, which mean the value is not what the reader took it for.
func (r *docReader) finish() error {
	switch {
	case r.err != nil:
		return r.err
	case len(r.b) != 0:
		return fmt.Errorf("%w: %d bytes left over", errViewCodec, len(r.b))
	}
	return nil
}

func (r *docReader) bool() bool { return r.byte() == 1 }

func (r *docReader) uvarint() uint64 { return readNumber(r, binary.Uvarint) }

func (r *docReader) varint() int64 { return readNumber(r, binary.Varint) }

// readNumber reads one varint with read (binary.Uvarint or binary.Varint).
func readNumber[T int64 | uint64](r *docReader, read func([]byte) (T, int)) T {
	v, n := read(r.b)
	if n <= 0 {
		r.fail("a number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a slice length, -1 for nil. It is bounded by the bytes
// left (every element takes at least one), so that a corrupt value cannot
// ask for gigabytes.
func (r *docReader) count() int {
	n := r.uvarint()
	if n == 0 {
		return -1
	}
	if n-1 > uint64(len(r.b)) {
		r.fail("a count")
		return -1
	}
	return int(n - 1)
}

func (r *docReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("a string")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *docReader) strs() []string {
	n := r.count()
	if n < 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *docReader) float() float64 {
	if len(r.b) < 8 {
		r.fail("a float")
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return f
}

func (r *docReader) perr() *domain.ProcessingError {
	if !r.bool() {
		return nil
	}
	return &domain.ProcessingError{Code: r.str(), Message: r.str(), Phase: r.str(), Retryable: r.bool()}
}

func (r *docReader) time() time.Time {
	if !r.bool() {
		return time.Time{}
	}
	s := r.varint()
	ns := r.uvarint()
	if ns >= 1e9 {
		r.fail("a time")
		return time.Time{}
	}
	return time.Unix(s, int64(ns)).UTC()
}
