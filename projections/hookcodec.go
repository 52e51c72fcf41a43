package projections

import "fmt"

// A batch webhook registration is written once per batch that has one,
// which on the bench's log is every batch: its JSON was the last JSON the
// fold wrote there. It is a version byte and the two strings (doccodec.go's
// encoding). Views in an older layout are rebuilt from the log
// (historyFormat); TestBatchWebhookCodecCoversEveryField fails when a
// field is added to BatchWebhook without it.
const hookCodecVersion = 1

func encodeBatchWebhook(h *BatchWebhook) []byte {
	b := make([]byte, 0, 8+len(h.URL)+len(h.Secret))
	return appendStrings(append(b, hookCodecVersion), h.URL, h.Secret)
}

func decodeBatchWebhook(val []byte, h *BatchWebhook) error {
	d := docReader{b: val}
	if v := d.byte(); v != hookCodecVersion {
		return fmt.Errorf("%w: batch webhook version %d", errViewCodec, v)
	}
	*h = BatchWebhook{URL: d.str(), Secret: d.str()}
	return d.finish()
}
