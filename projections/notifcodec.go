package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/docket/docket/domain"
)

// A webhook notification is written when its batch completes and again on
// every delivery attempt, and its JSON was most of what JSON encoding of
// views still cost the apply path once documents and batches had
// encodings of their own: the signed body it carries went through base64,
// and its field names were close to a third of its bytes. So it is encoded like the document view
// (doccodec.go): after a version byte, the fields in declaration order,
//
//	ID, OrgID                           strings
//	Partition                           zig-zag varint
//	Target                              string
//	Endpoint                            bool
//	DocumentID                          string
//	Attempt                             zig-zag varint
//	JobID, SessionID, URL, Secret, EventType   strings
//	Payload                             0 (nil), or uvarint length+1 and the bytes
//	CreatedAt                           time
//	Attempts                            zig-zag varint
//	State                               string
//	NextAt                              time
//	LastStatus                          zig-zag varint
//	LastOutcome, LastError              strings
//	LastAt                              time
//
// Views in an older layout (JSON notifications) are rebuilt from the log
// (historyFormat). TestNotificationCodecCoversEveryField fails when a
// field is added to domain.Notification without it.
const notifCodecVersion = 1

func encodeNotification(n *domain.Notification) []byte {
	// Room for every string, and 96 bytes for the rest (their lengths, the
	// numbers, three times): the encoding is kept (Tx.written), and one
	// that outgrew its buffer left a copy behind and kept twice the room
	// (128 bytes and three strings was short of the bench's notifications).
	b := make([]byte, 0, 96+len(n.ID)+len(n.OrgID)+len(n.Target)+len(n.DocumentID)+len(n.JobID)+len(n.SessionID)+
		len(n.URL)+len(n.Secret)+len(n.EventType)+len(n.Payload)+len(n.State)+len(n.LastOutcome)+len(n.LastError))
	b = append(b, notifCodecVersion)
	b = appendStrings(b, n.ID, n.OrgID)
	b = binary.AppendVarint(b, int64(n.Partition))
	b = appendStrings(b, n.Target)
	b = appendBool(b, n.Endpoint)
	b = appendStrings(b, n.DocumentID)
	b = binary.AppendVarint(b, int64(n.Attempt))
	b = appendStrings(b, n.JobID, n.SessionID, n.URL, n.Secret, n.EventType)
	b = append(appendCount(b, len(n.Payload), n.Payload == nil), n.Payload...)
	b = appendTimes(b, n.CreatedAt)
	b = binary.AppendVarint(b, int64(n.Attempts))
	b = appendStrings(b, n.State)
	b = appendTimes(b, n.NextAt)
	b = binary.AppendVarint(b, int64(n.LastStatus))
	b = appendStrings(b, n.LastOutcome, n.LastError)
	return appendTimes(b, n.LastAt)
}

func decodeNotification(val []byte, n *domain.Notification) error {
	r := docReader{b: val}
	if v := r.byte(); v != notifCodecVersion {
		return fmt.Errorf("%w: notification version %d", errViewCodec, v)
	}
	*n = domain.Notification{ID: r.str(), OrgID: r.str(), Partition: int32(r.varint())}
	n.Target = r.str()
	n.Endpoint = r.bool()
	n.DocumentID = r.str()
	n.Attempt = int(r.varint())
	n.JobID, n.SessionID, n.URL, n.Secret, n.EventType = r.str(), r.str(), r.str(), r.str(), r.str()
	n.Payload = r.bytes()
	n.CreatedAt = r.time()
	n.Attempts = int(r.varint())
	n.State = r.str()
	n.NextAt = r.time()
	n.LastStatus = int(r.varint())
	n.LastOutcome, n.LastError = r.str(), r.str()
	n.LastAt = r.time()
	return r.finish()
}

// bytes reads what appendCount and the bytes after it wrote: nil for a nil
// slice, a copy otherwise (val belongs to Pebble).
func (r *docReader) bytes() []byte {
	n := r.count()
	if n < 0 {
		return nil
	}
	out := make([]byte, n)
	copy(out, r.b[:n])
	r.b = r.b[n:]
	return out
}
