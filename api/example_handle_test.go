package api_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docket/docket/api"
)

func ExampleSigner() {
	// In production the keys come from ParseHandleKeys (flag or environment)
	// or NewHandleKey (embedded mode); a fixed key keeps the example stable.
	key := api.HandleKey{ID: "k1", Secret: bytes.Repeat([]byte{0x42}, 32)}
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	signer, err := api.NewSigner([]api.HandleKey{key}, api.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}

	jobID := signer.Sign("org_acme", api.Handle{
		Kind:    api.HandleKindExtraction,
		Subject: "job-0193f2a4",
		Expires: now.Add(24 * time.Hour),
	})
	fmt.Println("prefix:", jobID[:4], "opaque:", !strings.Contains(jobID, "0193f2a4"))

	h, err := signer.Verify("org_acme", jobID)
	fmt.Printf("owner: %c %s %v %v\n", h.Kind, h.Subject, h.Expires.Format(time.RFC3339), err)

	// Another organization, a tampered handle and an expired one all fail
	// with the same error, which the API answers as 404.
	_, errOther := signer.Verify("org_other", jobID)
	_, errTampered := signer.Verify("org_acme", jobID+"A")
	now = now.Add(25 * time.Hour)
	_, errExpired := signer.Verify("org_acme", jobID)
	fmt.Println(errOther == errTampered && errTampered == errExpired, errors.Is(errOther, api.ErrNotFound))
	fmt.Println(errOther)
	// Output:
	// prefix: job_ opaque: true
	// owner: x job-0193f2a4 2030-01-02T12:00:00Z <nil>
	// true true
	// api: not found: unknown job or session
}
