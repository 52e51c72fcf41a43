package projections

import "testing"

// TestBatchWebhookCodecCoversEveryField round-trips a registration with
// every field set, so a field added to BatchWebhook without the codec
// fails here.
func TestBatchWebhookCodecCoversEveryField(t *testing.T) {
	t.Parallel()
	roundTrips(t, encodeBatchWebhook, decodeBatchWebhook, filled[BatchWebhook](), BatchWebhook{URL: "http://127.0.0.1:1/hook"})
}

// TestBatchWebhookCodecReadsWhatJSONRead: the views held registrations as
// JSON until layout 5, and read them back as they do now.
func TestBatchWebhookCodecReadsWhatJSONRead(t *testing.T) {
	t.Parallel()
	readsWhatJSONRead(t, func(h BatchWebhook) string { return h.URL }, filled[BatchWebhook](), BatchWebhook{})
}

// TestBatchWebhookCodecRefusesBrokenValues: truncations, bytes left over
// and an unknown version are errors.
func TestBatchWebhookCodecRefusesBrokenValues(t *testing.T) {
	t.Parallel()
	h := filled[BatchWebhook]()
	refusesBroken(t, encodeBatchWebhook(&h), func(val []byte) error { return decodeBatchWebhook(val, &BatchWebhook{}) })
}

// FuzzBatchWebhookCodec: whatever the bytes, decoding returns a
// registration or an error, and one it returns reads back the same after
// encoding it again.
func FuzzBatchWebhookCodec(f *testing.F) {
	h := filled[BatchWebhook]()
	f.Add(encodeBatchWebhook(&h))
	fuzzReadsBack(f, encodeBatchWebhook, decodeBatchWebhook)
}
