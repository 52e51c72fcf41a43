package api

import (
	"strings"
	"testing"
	"time"
)

// FuzzVerify checks that Verify never panics on any (org, handle) and that
// it accepts only what Sign produced for that org: whenever Verify succeeds,
// signing the returned Handle for the same org with the key named in the
// handle must reproduce the input byte for byte. Since the fuzzer does not
// know the secrets, any other success would be a forgery or a second
// spelling of a handle.
func FuzzVerify(f *testing.F) {
	k1, k2 := testHandleKey("k1", 1), testHandleKey("old", 2)
	clock := WithClock(func() time.Time { return testHandleNow })
	verifier, err := NewSigner([]HandleKey{k1, k2}, clock)
	if err != nil {
		f.Fatal(err)
	}
	// bySigningKey re-signs with exactly the key a handle names.
	bySigningKey := map[string]*Signer{"k1": verifier}
	if bySigningKey["old"], err = NewSigner([]HandleKey{k2, k1}, clock); err != nil {
		f.Fatal(err)
	}

	orgs := []string{"org_1", "org_2", ""}
	for _, org := range orgs {
		for _, s := range []*Signer{bySigningKey["k1"], bySigningKey["old"]} {
			for _, hs := range sampleHandles(s, org) {
				f.Add(org, hs)
				f.Add(orgs[(len(org)+1)%len(orgs)], hs) // another org's handle
				f.Add(org, hs[:len(hs)-1])
				f.Add(org, hs+"A")
				f.Add(org, "ses_"+hs[handlePrefixLen:])
				f.Add(org, hs[:10]+"_"+hs[11:])
			}
		}
		f.Add(org, signSession(bySigningKey["k1"], org, strings.Repeat("z", handleMaxSubject)))
		f.Add(org, bySigningKey["k1"].Sign(org, Handle{Kind: HandleKindExtraction, Subject: "expired", Expires: testHandleNow.Add(-time.Second)}))
	}
	for _, g := range []string{"", "job_", "ses_", "job_AAAA", "garbage", "job_\n", strings.Repeat("A", 600)} {
		f.Add("org_1", g)
	}

	f.Fuzz(func(t *testing.T, org, handle string) {
		h, err := verifier.Verify(org, handle)
		if err != nil {
			if err != ErrBadHandle { //nolint:errorlint
				t.Fatalf("Verify error %v is not ErrBadHandle", err)
			}
			if h != (Handle{}) {
				t.Fatalf("Verify returned %+v with an error", h)
			}
		} else {
			raw, derr := handleEncoding.DecodeString(handle[handlePrefixLen:])
			if derr != nil {
				t.Fatalf("Verify accepted undecodable %q", handle)
			}
			kid := string(raw[2 : 2+int(raw[1])])
			s := bySigningKey[kid]
			if s == nil {
				t.Fatalf("Verify accepted %q with unknown key id %q", handle, kid)
			}
			if again := s.Sign(org, h); again != handle {
				t.Fatalf("Verify(%q, %q) = %+v, but Sign gives %q", org, handle, h, again)
			}
			if !h.Expires.IsZero() && !testHandleNow.Before(h.Expires) {
				t.Fatalf("Verify accepted expired %+v", h)
			}
			if _, err := verifier.Verify(org+"\x00", handle); err == nil {
				t.Fatalf("handle %q verifies for another org", handle)
			}
		}

		// Round trip with the fuzzed bytes as the subject, for every kind.
		subject := handle
		if len(subject) > handleMaxSubject {
			subject = subject[:handleMaxSubject]
		}
		for _, kind := range handleKinds {
			want := Handle{Kind: kind, Subject: subject}
			hs := verifier.Sign(org, want)
			if got, err := verifier.Verify(org, hs); err != nil || got != want {
				t.Fatalf("round trip %+v for org %q: %+v, %v", want, org, got, err)
			}
			if _, err := verifier.Verify(org+"x", hs); err != ErrBadHandle { //nolint:errorlint
				t.Fatalf("handle for org %q verifies for org %q", org, org+"x")
			}
		}
	})
}

// signSession signs a session handle with subject for org.
func signSession(s *Signer, org, subject string) string {
	return s.Sign(org, Handle{Kind: HandleKindSession, Subject: subject})
}
