package projections

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

// TestNotificationCodecCoversEveryField round-trips a notification with
// every field set, so a field added to domain.Notification without the
// codec fails here; and one as batchDone makes it, with a signed body.
func TestNotificationCodecCoversEveryField(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 16, 0, 0, 123456789, time.UTC)
	made := domain.Notification{ID: "msg_1", OrgID: "o", Partition: 7, Target: "b", URL: "http://127.0.0.1:1/hook", Secret: "whsec_x",
		EventType: "batch.completed", Payload: []byte(`{"data":{"batch_name":"b"}}`), CreatedAt: at, State: "pending", NextAt: at}
	roundTrips(t, encodeNotification, decodeNotification, filled[domain.Notification](), made, domain.Notification{ID: "msg_2", OrgID: "o"})
}

// TestNotificationCodecReadsWhatJSONRead: the views held notifications as
// JSON until layout 4; what a notification read back as then, it reads
// back as now, nil and empty payloads apart (JSON's null and "").
func TestNotificationCodecReadsWhatJSONRead(t *testing.T) {
	t.Parallel()
	readsWhatJSONRead(t, func(n domain.Notification) string { return n.ID },
		filled[domain.Notification](), domain.Notification{ID: "nil"}, domain.Notification{ID: "empty", Payload: []byte{}})
}

// readsWhatJSONRead checks that each of vs, encoded by encodeView, decodes
// to what its JSON decoded to when the views stored it as JSON.
func readsWhatJSONRead[T any](t *testing.T, name func(T) string, vs ...T) {
	t.Helper()
	for _, v := range vs {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var viaJSON, viaCodec T
		if err := json.Unmarshal(raw, &viaJSON); err != nil {
			t.Fatal(err)
		}
		if err := decodeView(must(encodeView(v)), &viaCodec); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(viaCodec, viaJSON) {
			t.Fatalf("%s:\n codec %#v\n  json %#v", name(v), viaCodec, viaJSON)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestNotificationCodecRefusesBrokenValues: truncations, bytes left over
// and an unknown version are errors.
func TestNotificationCodecRefusesBrokenValues(t *testing.T) {
	t.Parallel()
	n := filled[domain.Notification]()
	refusesBroken(t, encodeNotification(&n), func(val []byte) error { return decodeNotification(val, &domain.Notification{}) })
}

// FuzzNotificationCodec: whatever the bytes, decoding returns a
// notification or an error, and one it returns reads back the same after
// encoding it again.
func FuzzNotificationCodec(f *testing.F) {
	n := filled[domain.Notification]()
	f.Add(encodeNotification(&n))
	f.Add(encodeNotification(&domain.Notification{ID: "msg_1", Payload: []byte{}}))
	fuzzReadsBack(f, encodeNotification, decodeNotification)
}
