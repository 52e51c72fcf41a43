package api

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWriteJSONNeverSendsABodyCutShort: a value JSON cannot carry answers
// 500 with the error envelope, not 200 and whatever was encoded before
// the encoder stopped; a value it can carry answers as asked.
func TestWriteJSONNeverSendsABodyCutShort(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodGet, "/v1/documents/doc_x", nil)
	bad := httptest.NewRecorder()
	writeJSON(bad, req, http.StatusOK, map[string]any{"id": "doc_x", "line_items": []map[string]float64{{"amount": math.NaN()}}})
	var env envelope
	if err := json.Unmarshal(bad.Body.Bytes(), &env); bad.Code != http.StatusInternalServerError || err != nil || env.Error.Code != "internal_error" {
		t.Fatalf("a NaN in the response: %d %q (%v), want 500 and the internal_error envelope", bad.Code, bad.Body.String(), err)
	}
	good := httptest.NewRecorder()
	writeJSON(good, req, http.StatusAccepted, map[string]any{"id": "doc_x"})
	var body map[string]string
	if err := json.Unmarshal(good.Body.Bytes(), &body); good.Code != http.StatusAccepted || err != nil || body["id"] != "doc_x" ||
		good.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("a good response: %d %q %q (%v)", good.Code, good.Header().Get("Content-Type"), good.Body.String(), err)
	}
}
