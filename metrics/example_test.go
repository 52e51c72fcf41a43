package metrics_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/docket/docket/metrics"
)

// A node makes one Metrics and hands its methods to the components as
// hooks; the registry is served at /metrics.
func Example() {
	m := metrics.New()
	m.Appended("DocumentUploaded")
	m.HTTPRequest("/v1/documents/{id}", "GET", 200, 3*time.Millisecond)
	m.WebhookAttempt("delivered")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var p expfmt.TextParser
	fams, _ := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	for _, name := range []string{"docket_events_appended_total", "docket_http_requests_total", "docket_webhook_attempts_total"} {
		m := fams[name].GetMetric()[0]
		fmt.Println(name, m.GetLabel()[0].GetValue(), m.GetCounter().GetValue())
	}
	// Output:
	// docket_events_appended_total DocumentUploaded 1
	// docket_http_requests_total GET 1
	// docket_webhook_attempts_total delivered 1
}
