package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/docket/docket/webhook"
)

func ExampleSign() {
	secret, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	ts := time.Unix(1614265330, 0)
	fmt.Println(webhook.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, []byte(`{"test": 2432232314}`), secret))
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

func ExampleValidateURL() {
	for _, u := range []string{
		"https://hooks.example.com/docket",
		"http://169.254.169.254/latest/meta-data/",
		"https://user:pass@hooks.example.com/",
	} {
		fmt.Println(webhook.ValidateURL(u, false, false))
	}
	// Output:
	// <nil>
	// webhook: refused address: 169.254.169.254 is link-local (cloud metadata lives here)
	// webhook: bad URL: credentials in URL
}

func ExampleClient_Deliver() {
	// A receiver: verifies each delivery with the endpoint's secret.
	encoded, _ := webhook.NewSecret() // stored with the endpoint
	secret, _ := webhook.ParseSecret(encoded)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, time.Now(), 0); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	// The receiver is on 127.0.0.1, so this client must allow loopback, as
	// in docket's embedded mode; by default it would be refused.
	client := webhook.NewClient(webhook.AllowLoopback(true), webhook.Timeout(5*time.Second))
	body := []byte(`{"type":"document.processed","data":{"id":"doc_1"}}`)
	h := webhook.Headers("msg_1", time.Now(), body, secret)
	res := client.Deliver(context.Background(), receiver.URL, h, body)
	fmt.Println(res.Outcome, res.Status, res.Err)

	res = webhook.NewClient().Deliver(context.Background(), receiver.URL, h, body)
	fmt.Println(res.Outcome, webhook.IsRefused(res.Err))
	// Output:
	// delivered 204 <nil>
	// refused true
}
