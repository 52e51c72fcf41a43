package api

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const handleAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

var handleKinds = []byte{HandleKindBatchPreprocess, HandleKindDocumentPreprocess, HandleKindExtraction, HandleKindSession}

// testHandleNow is the fixed "now" of tests that use WithClock.
var testHandleNow = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

func testHandleKey(id string, fill byte) HandleKey {
	return HandleKey{ID: id, Secret: bytes.Repeat([]byte{fill}, 32)}
}

func newTestSigner(t testing.TB, keys ...HandleKey) *Signer {
	t.Helper()
	if len(keys) == 0 {
		keys = []HandleKey{testHandleKey("k1", 1)}
	}
	s, err := NewSigner(keys, WithClock(func() time.Time { return testHandleNow }))
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	return s
}

// mustBadHandle fails unless err is exactly ErrBadHandle.
func mustBadHandle(t *testing.T, what string, h Handle, err error) {
	t.Helper()
	if err != ErrBadHandle { //nolint:errorlint // identity is the point: one value for every failure
		t.Fatalf("%s: Verify = %+v, %v; want ErrBadHandle", what, h, err)
	}
	if h != (Handle{}) {
		t.Fatalf("%s: Verify returned non-zero handle %+v with error", what, h)
	}
}

func TestErrBadHandleIsNotFound(t *testing.T) {
	t.Parallel()
	if !errors.Is(ErrBadHandle, ErrNotFound) {
		t.Fatal("ErrBadHandle does not wrap ErrNotFound")
	}
	status, code := classify(ErrBadHandle)
	if status != http.StatusNotFound || code != "not_found" {
		t.Fatalf("classify(ErrBadHandle) = %d %q; want 404 not_found", status, code)
	}
	if !strings.HasPrefix(ErrBadHandle.Error(), "api: ") {
		t.Fatalf("message %q lacks the api: prefix", ErrBadHandle)
	}
}

func TestHandleRoundTrip(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	future := testHandleNow.Add(time.Hour)
	subjects := []string{
		"",
		"job-0193f2a4",
		"doc-7f3a/3",
		"ünïcødé ✓",
		"\x00\xff binary \n",
		strings.Repeat("s", handleMaxSubject),
	}
	for _, kind := range handleKinds {
		for _, subject := range subjects {
			for _, exp := range []time.Time{{}, future, future.Add(500 * time.Millisecond), testHandleNow.Add(time.Second)} {
				t.Run(fmt.Sprintf("%c/%d/%v", kind, len(subject), exp.IsZero()), func(t *testing.T) {
					t.Parallel()
					in := Handle{Kind: kind, Subject: subject, Expires: exp}
					hs := s.Sign("org_1", in)
					if want := handlePrefix(kind); !strings.HasPrefix(hs, want) {
						t.Fatalf("handle %q lacks prefix %q", hs, want)
					}
					if len(hs) > handleMaxLen {
						t.Fatalf("handle is %d chars, max %d", len(hs), handleMaxLen)
					}
					if strings.Contains(hs, subject) && subject != "" {
						t.Fatalf("handle %q shows its subject in clear", hs)
					}
					if strings.Contains(hs, "org_1") {
						t.Fatalf("handle %q contains the org", hs)
					}
					got, err := s.Verify("org_1", hs)
					if err != nil {
						t.Fatalf("Verify(Sign(%+v)) = %v", in, err)
					}
					if got.Kind != kind || got.Subject != subject || !got.Expires.Equal(exp.Truncate(time.Second)) {
						t.Fatalf("Verify = %+v; want %+v", got, in)
					}
					if !exp.IsZero() && got.Expires.Location() != time.UTC {
						t.Fatalf("Expires location %v; want UTC", got.Expires.Location())
					}
					if again := s.Sign("org_1", in); again != hs {
						t.Fatalf("Sign is not deterministic: %q then %q", hs, again)
					}
				})
			}
		}
	}
}

func TestHandleLongestFitsMax(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t, testHandleKey("abcdefgh", 7))
	hs := s.Sign("o", Handle{Kind: HandleKindSession, Subject: strings.Repeat("z", handleMaxSubject), Expires: testHandleNow.Add(time.Hour)})
	if len(hs) != handleMaxLen {
		t.Fatalf("longest handle is %d chars; handleMaxLen is %d", len(hs), handleMaxLen)
	}
	if handleMaxLen > 512 {
		t.Fatalf("handleMaxLen %d exceeds 512", handleMaxLen)
	}
	if _, err := s.Verify("o", hs); err != nil {
		t.Fatalf("Verify longest: %v", err)
	}
}

func TestHandleRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := testHandleKey("k1", 1), testHandleKey("k2", 2)
	h := Handle{Kind: HandleKindExtraction, Subject: "job-1"}

	before := newTestSigner(t, oldKey)
	oldHandle := before.Sign("org", h)

	rotated := newTestSigner(t, newKey, oldKey)
	if got, err := rotated.Verify("org", oldHandle); err != nil || got != h {
		t.Fatalf("after rotation, old handle: %+v, %v", got, err)
	}
	newHandle := rotated.Sign("org", h)
	if newHandle == oldHandle {
		t.Fatal("rotated signer still signs with the old key")
	}
	if got, err := rotated.Verify("org", newHandle); err != nil || got != h {
		t.Fatalf("after rotation, new handle: %+v, %v", got, err)
	}
	// A signer that has not learnt the new key yet rejects new handles.
	got, err := before.Verify("org", newHandle)
	mustBadHandle(t, "new handle on old signer", got, err)

	retired := newTestSigner(t, newKey)
	got, err = retired.Verify("org", oldHandle)
	mustBadHandle(t, "old handle after key removal", got, err)
	if _, err := retired.Verify("org", newHandle); err != nil {
		t.Fatalf("new handle after old key removal: %v", err)
	}
}

func TestHandleOtherOrg(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	hs := s.Sign("org_a", Handle{Kind: HandleKindBatchPreprocess, Subject: "job-1"})
	for _, org := range []string{"org_b", "", "org_a ", "org_A", "org_", "org_aa", "Org_a"} {
		got, err := s.Verify(org, hs)
		mustBadHandle(t, "org "+org, got, err)
	}
	// The org and the body are not confusable: moving bytes between the
	// subject and the org does not produce a valid handle.
	a := s.Sign("xy", Handle{Kind: HandleKindSession, Subject: "ab"})
	b := s.Sign("bxy", Handle{Kind: HandleKindSession, Subject: "a"})
	if a == b {
		t.Fatal("different (subject, org) pairs signed identically")
	}
}

func TestHandleExpiry(t *testing.T) {
	t.Parallel()
	now := testHandleNow
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	s, err := NewSigner([]HandleKey{testHandleKey("k1", 1)}, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	exp := testHandleNow.Add(time.Minute)
	hs := s.Sign("org", Handle{Kind: HandleKindSession, Subject: "ses-1", Expires: exp})
	never := s.Sign("org", Handle{Kind: HandleKindSession, Subject: "ses-2"})

	steps := []struct {
		at time.Time
		ok bool
	}{
		{testHandleNow, true},
		{exp.Add(-time.Second), true},
		{exp.Add(-time.Nanosecond), true},
		{exp, false},
		{exp.Add(time.Nanosecond), false},
		{exp.Add(24 * time.Hour), false},
	}
	for _, st := range steps {
		set(st.at)
		got, err := s.Verify("org", hs)
		if st.ok {
			if err != nil {
				t.Fatalf("at %v: %v", st.at, err)
			}
			continue
		}
		mustBadHandle(t, "expired at "+st.at.String(), got, err)
		if _, err := s.Verify("org", never); err != nil {
			t.Fatalf("non-expiring handle at %v: %v", st.at, err)
		}
	}

	// Expiries at or before the epoch are already expired, never "no expiry".
	set(testHandleNow)
	for _, e := range []time.Time{time.Unix(0, 0), time.Unix(-5, 0), time.Unix(1, 0), time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)} {
		got, err := s.Verify("org", s.Sign("org", Handle{Kind: HandleKindSession, Subject: "x", Expires: e}))
		mustBadHandle(t, "expiry "+e.String(), got, err)
	}
}

func TestHandleDefaultClock(t *testing.T) {
	t.Parallel()
	s, err := NewSigner([]HandleKey{testHandleKey("k1", 1)}, WithClock(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	live := s.Sign("o", Handle{Kind: HandleKindExtraction, Subject: "j", Expires: time.Now().Add(time.Hour)})
	if _, err := s.Verify("o", live); err != nil {
		t.Fatalf("live handle: %v", err)
	}
	dead := s.Sign("o", Handle{Kind: HandleKindExtraction, Subject: "j", Expires: time.Now().Add(-time.Second)})
	got, err := s.Verify("o", dead)
	mustBadHandle(t, "expired with time.Now", got, err)
}

// sampleHandles returns one handle per kind, with and without expiry.
func sampleHandles(s *Signer, org string) []string {
	var out []string
	for _, k := range handleKinds {
		out = append(out,
			s.Sign(org, Handle{Kind: k, Subject: "subject-" + string(k)}),
			s.Sign(org, Handle{Kind: k, Subject: "", Expires: testHandleNow.Add(time.Hour)}),
		)
	}
	return out
}

func TestHandleEveryCharacterReplaced(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	for _, hs := range sampleHandles(s, "org") {
		for i := 0; i < len(hs); i++ {
			for j := 0; j < len(handleAlphabet); j++ {
				c := handleAlphabet[j]
				if c == hs[i] {
					continue
				}
				mutated := hs[:i] + string(c) + hs[i+1:]
				got, err := s.Verify("org", mutated)
				if err != ErrBadHandle { //nolint:errorlint
					t.Fatalf("%q with position %d set to %q: Verify = %+v, %v", hs, i, c, got, err)
				}
			}
		}
	}
}

func TestHandleEveryBitFlipped(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	for _, hs := range sampleHandles(s, "org") {
		prefix := hs[:handlePrefixLen]
		raw, err := handleEncoding.DecodeString(hs[handlePrefixLen:])
		if err != nil {
			t.Fatal(err)
		}
		for bit := 0; bit < len(raw)*8; bit++ {
			m := bytes.Clone(raw)
			m[bit/8] ^= 1 << (bit % 8)
			got, err := s.Verify("org", prefix+handleEncoding.EncodeToString(m))
			mustBadHandle(t, fmt.Sprintf("%q bit %d", hs, bit), got, err)
		}
	}
}

func TestHandleTruncated(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	for _, hs := range sampleHandles(s, "org") {
		for i := 0; i < len(hs); i++ {
			got, err := s.Verify("org", hs[:i])
			mustBadHandle(t, fmt.Sprintf("%q[:%d]", hs, i), got, err)
			got, err = s.Verify("org", hs[i+1:])
			mustBadHandle(t, fmt.Sprintf("%q[%d:]", hs, i+1), got, err)
		}
		raw, _ := handleEncoding.DecodeString(hs[handlePrefixLen:])
		for i := 0; i < len(raw); i++ {
			got, err := s.Verify("org", hs[:handlePrefixLen]+handleEncoding.EncodeToString(raw[:i]))
			mustBadHandle(t, fmt.Sprintf("%q raw[:%d]", hs, i), got, err)
		}
	}
}

func TestHandleAppended(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	suffixes := []string{"=", "==", "\n", "\r\n", " ", "\x00", ".", "%3D", "A", "AA", "AAA", "AAAA", "/", "+", "?x=1", "#"}
	for j := 0; j < len(handleAlphabet); j++ {
		suffixes = append(suffixes, handleAlphabet[j:j+1])
	}
	for _, hs := range sampleHandles(s, "org") {
		for _, suf := range suffixes {
			got, err := s.Verify("org", hs+suf)
			mustBadHandle(t, fmt.Sprintf("%q+%q", hs, suf), got, err)
			got, err = s.Verify("org", suf+hs)
			mustBadHandle(t, fmt.Sprintf("%q+%q", suf, hs), got, err)
		}
		// Appended raw bytes, re-encoded as valid base64url.
		raw, _ := handleEncoding.DecodeString(hs[handlePrefixLen:])
		for _, extra := range [][]byte{{0}, {1, 2}, {0, 0, 0}, raw} {
			got, err := s.Verify("org", hs[:handlePrefixLen]+handleEncoding.EncodeToString(append(bytes.Clone(raw), extra...)))
			mustBadHandle(t, fmt.Sprintf("%q raw+%x", hs, extra), got, err)
		}
		// Whitespace inside, which the base64 decoder would otherwise skip.
		mid := handlePrefixLen + 5
		for _, ins := range []string{"\n", "\r", " ", "="} {
			got, err := s.Verify("org", hs[:mid]+ins+hs[mid:])
			mustBadHandle(t, fmt.Sprintf("%q with %q inserted", hs, ins), got, err)
		}
	}
}

func TestHandleMalformed(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	valid := s.Sign("org", Handle{Kind: HandleKindExtraction, Subject: "job-1"})
	session := s.Sign("org", Handle{Kind: HandleKindSession, Subject: "ses-1"})
	body := valid[handlePrefixLen:]
	cases := []struct {
		name, handle string
	}{
		{"empty", ""},
		{"prefix only", "job_"},
		{"session prefix only", "ses_"},
		{"short", "job"},
		{"garbage", "not a handle at all"},
		{"garbage with prefix", "job_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"},
		{"all A", "job_" + strings.Repeat("A", 60)},
		{"all underscore", "job_" + strings.Repeat("_", 60)},
		{"max length garbage", "job_" + strings.Repeat("x", handleMaxLen-handlePrefixLen)},
		{"over max length", "job_" + strings.Repeat("A", handleMaxLen)},
		{"huge", "job_" + strings.Repeat("A", 1<<20)},
		{"invalid utf8", "job_\xff\xfe\xfd"},
		{"nul bytes", "job_" + strings.Repeat("\x00", 40)},
		{"no prefix", body},
		{"uppercase prefix", "JOB_" + body},
		{"dash prefix", "job-" + body},
		{"other prefix", "doc_" + body},
		{"short prefix", "jo_" + body},
		{"double prefix", "job_" + valid},
		{"job body with ses prefix", "ses_" + body},
		{"ses body with job prefix", "job_" + session[handlePrefixLen:]},
		{"standard base64 padded", "job_" + base64.URLEncoding.EncodeToString(mustDecodeHandle(t, valid))},
		{"standard alphabet", "job_" + strings.NewReplacer("-", "+", "_", "/").Replace(body) + "+/"},
		{"path traversal", "job_../../etc/passwd"},
		{"percent encoded", "job_%41%41%41%41"},
	}
	for _, tc := range cases {
		got, err := s.Verify("org", tc.handle)
		mustBadHandle(t, tc.name, got, err)
	}
}

func mustDecodeHandle(t *testing.T, hs string) []byte {
	t.Helper()
	raw, err := handleEncoding.DecodeString(hs[handlePrefixLen:])
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestHandleUnknownKey(t *testing.T) {
	t.Parallel()
	signer := newTestSigner(t, testHandleKey("k1", 1))
	hs := signer.Sign("org", Handle{Kind: HandleKindBatchPreprocess, Subject: "job-1"})
	verifiers := map[string]*Signer{
		"other id":               newTestSigner(t, testHandleKey("k2", 1)),
		"same id, other secret":  newTestSigner(t, testHandleKey("k1", 2)),
		"same secret, longer id": newTestSigner(t, testHandleKey("k10", 1)),
		"several others":         newTestSigner(t, testHandleKey("a", 3), testHandleKey("b", 4), testHandleKey("k", 1)),
	}
	for name, v := range verifiers {
		got, err := v.Verify("org", hs)
		mustBadHandle(t, name, got, err)
	}
}

// forgeHandle builds a handle from arbitrary fields with a correct MAC, to
// check that Verify rejects authentic-but-invalid contents Sign never makes.
func forgeHandle(prefix string, version byte, kid string, kind byte, exp int64, subject string, secret []byte, org string) string {
	raw := []byte{version, byte(len(kid))}
	raw = append(raw, kid...)
	raw = append(raw, kind)
	raw = binary.BigEndian.AppendUint64(raw, uint64(exp))
	raw = append(raw, byte(len(subject)))
	raw = append(raw, subject...)
	raw = appendHandleTag(raw, secret, raw, org)
	return prefix + handleEncoding.EncodeToString(raw)
}

func TestHandleAuthenticButInvalid(t *testing.T) {
	t.Parallel()
	key := testHandleKey("k1", 1)
	s := newTestSigner(t, key)
	future := testHandleNow.Add(time.Hour).Unix()
	// The forger itself must agree with Sign, or the cases below prove nothing.
	if got, want := forgeHandle("job_", handleVersion, "k1", 'x', future, "j", key.Secret, "org"), s.Sign("org", Handle{Kind: 'x', Subject: "j", Expires: time.Unix(future, 0)}); got != want {
		t.Fatalf("forgeHandle = %q; Sign = %q", got, want)
	}
	cases := []struct {
		name, handle string
	}{
		{"version 0", forgeHandle("job_", 0, "k1", 'x', future, "j", key.Secret, "org")},
		{"version 2", forgeHandle("job_", 2, "k1", 'x', future, "j", key.Secret, "org")},
		{"unknown kind", forgeHandle("job_", handleVersion, "k1", 'q', future, "j", key.Secret, "org")},
		{"kind zero", forgeHandle("job_", handleVersion, "k1", 0, future, "j", key.Secret, "org")},
		{"kind s under job_", forgeHandle("job_", handleVersion, "k1", 's', future, "j", key.Secret, "org")},
		{"kind x under ses_", forgeHandle("ses_", handleVersion, "k1", 'x', future, "j", key.Secret, "org")},
		{"negative expiry", forgeHandle("job_", handleVersion, "k1", 'x', -1, "j", key.Secret, "org")},
		{"min expiry", forgeHandle("job_", handleVersion, "k1", 'x', -1<<63, "j", key.Secret, "org")},
		{"subject too long", forgeHandle("job_", handleVersion, "k1", 'x', future, strings.Repeat("s", handleMaxSubject+1), key.Secret, "org")},
		{"empty key id", forgeHandle("job_", handleVersion, "", 'x', future, "j", key.Secret, "org")},
	}
	for _, tc := range cases {
		got, err := s.Verify("org", tc.handle)
		mustBadHandle(t, tc.name, got, err)
	}

	// Length fields that disagree with the body, under a correct MAC.
	good := mustDecodeHandle(t, s.Sign("org", Handle{Kind: 'x', Subject: "abc"}))
	body := good[:len(good)-handleTagLen]
	for _, mut := range []struct {
		name string
		at   int
		val  byte
	}{
		{"key id length 0", 1, 0},
		{"key id length 1", 1, 1},
		{"key id length 3", 1, 3},
		{"key id length 255", 1, 255},
		{"subject length 0", len(body) - 4, 0},
		{"subject length 2", len(body) - 4, 2},
		{"subject length 4", len(body) - 4, 4},
		{"subject length 255", len(body) - 4, 255},
	} {
		b := bytes.Clone(body)
		b[mut.at] = mut.val
		hs := "job_" + handleEncoding.EncodeToString(appendHandleTag(b, key.Secret, b, "org"))
		got, err := s.Verify("org", hs)
		mustBadHandle(t, mut.name, got, err)
	}
}

func TestHandleFailuresIdentical(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	valid := s.Sign("org", Handle{Kind: HandleKindExtraction, Subject: "job-1"})
	expired := s.Sign("org", Handle{Kind: HandleKindExtraction, Subject: "job-1", Expires: testHandleNow.Add(-time.Second)})
	otherKey := newTestSigner(t, testHandleKey("zz", 9)).Sign("org", Handle{Kind: HandleKindExtraction, Subject: "job-1"})
	last := valid[len(valid)-1]
	flipped := valid[:len(valid)-1] + string(handleAlphabet[(strings.IndexByte(handleAlphabet, last)+1)%64])
	inputs := []struct{ org, handle string }{
		{"org", ""},
		{"org", "garbage"},
		{"org", valid[:len(valid)-1]},
		{"org", valid + "A"},
		{"org", flipped},
		{"org", "ses_" + valid[handlePrefixLen:]},
		{"org", expired},
		{"org", otherKey},
		{"other", valid},
	}
	var errs []error
	var msgs []string
	for _, in := range inputs {
		_, err := s.Verify(in.org, in.handle)
		errs = append(errs, err)
		msgs = append(msgs, fmt.Sprint(err))
		status, body := errorResponse(err, "req-1")
		if status != http.StatusNotFound {
			t.Fatalf("%q: status %d", in.handle, status)
		}
		if body.Error.Message != ErrBadHandle.Error() || body.Error.Code != "not_found" {
			t.Fatalf("%q: body %+v", in.handle, body)
		}
	}
	for i := range errs {
		if errs[i] != errs[0] || msgs[i] != msgs[0] { //nolint:errorlint
			t.Fatalf("failure %d (%v) differs from failure 0 (%v)", i, errs[i], errs[0])
		}
	}
}

func TestNewSignerValidation(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{1}, 32)
	cases := []struct {
		name string
		keys []HandleKey
		ok   bool
	}{
		{"nil", nil, false},
		{"empty", []HandleKey{}, false},
		{"one", []HandleKey{{"k1", secret}}, true},
		{"max id", []HandleKey{{"abcdefgh", secret}}, true},
		{"digits", []HandleKey{{"20250101", secret}}, true},
		{"long secret", []HandleKey{{"k", bytes.Repeat([]byte{1}, 128)}}, true},
		{"two", []HandleKey{{"a", secret}, {"b", secret}}, true},
		{"empty id", []HandleKey{{"", secret}}, false},
		{"id too long", []HandleKey{{"abcdefghi", secret}}, false},
		{"uppercase id", []HandleKey{{"K1", secret}}, false},
		{"dash id", []HandleKey{{"k-1", secret}}, false},
		{"colon id", []HandleKey{{"k:1", secret}}, false},
		{"comma id", []HandleKey{{"k,1", secret}}, false},
		{"space id", []HandleKey{{"k 1", secret}}, false},
		{"unicode id", []HandleKey{{"kü", secret}}, false},
		{"duplicate", []HandleKey{{"a", secret}, {"a", bytes.Repeat([]byte{2}, 32)}}, false},
		{"nil secret", []HandleKey{{"a", nil}}, false},
		{"short secret", []HandleKey{{"a", secret[:31]}}, false},
		{"short second secret", []HandleKey{{"a", secret}, {"b", secret[:16]}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewSigner(tc.keys)
			if tc.ok != (err == nil) || (s == nil) == tc.ok {
				t.Fatalf("NewSigner = %v, %v; want ok=%v", s, err, tc.ok)
			}
			if err != nil && bytes.Contains([]byte(err.Error()), secret[:8]) {
				t.Fatalf("error %q contains secret bytes", err)
			}
		})
	}
}

func TestNewSignerCopiesKeys(t *testing.T) {
	t.Parallel()
	keys := []HandleKey{testHandleKey("k1", 1)}
	s := newTestSigner(t, keys...)
	hs := s.Sign("org", Handle{Kind: HandleKindSession, Subject: "x"})
	keys[0].Secret[0] ^= 0xff
	keys[0].ID = "k2"
	if _, err := s.Verify("org", hs); err != nil {
		t.Fatalf("mutating the caller's keys changed the signer: %v", err)
	}
	if again := s.Sign("org", Handle{Kind: HandleKindSession, Subject: "x"}); again != hs {
		t.Fatal("mutating the caller's keys changed signing")
	}
}

func TestSignPanicsOnProgrammingErrors(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t)
	for _, h := range []Handle{
		{Kind: 0, Subject: "x"},
		{Kind: 'j', Subject: "x"},
		{Kind: 'P', Subject: "x"},
		{Kind: HandleKindExtraction, Subject: strings.Repeat("x", handleMaxSubject+1)},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Sign(%+v) did not panic", h)
				}
			}()
			s.Sign("org", h)
		}()
	}
}

func TestParseHandleKeys(t *testing.T) {
	t.Parallel()
	secret := append(bytes.Repeat([]byte{0xfb, 0xff, 0x7e}, 11), 1) // 34 bytes: '+', '/' (or '-', '_') and padding in base64
	std := base64.StdEncoding.EncodeToString(secret)
	rawStd := base64.RawStdEncoding.EncodeToString(secret)
	url := base64.URLEncoding.EncodeToString(secret)
	rawURL := base64.RawURLEncoding.EncodeToString(secret)
	other := bytes.Repeat([]byte{9}, 32)
	otherStd := base64.StdEncoding.EncodeToString(other)

	ok := []struct {
		name, in string
		want     []HandleKey
	}{
		{"std", "k1:" + std, []HandleKey{{"k1", secret}}},
		{"raw std", "k1:" + rawStd, []HandleKey{{"k1", secret}}},
		{"url", "k1:" + url, []HandleKey{{"k1", secret}}},
		{"raw url", "k1:" + rawURL, []HandleKey{{"k1", secret}}},
		{"two", "k2:" + otherStd + ",k1:" + std, []HandleKey{{"k2", other}, {"k1", secret}}},
		{"spaces and newline", " k2 : " + otherStd + " ,\tk1:" + std + "\n", []HandleKey{{"k2", other}, {"k1", secret}}},
	}
	for _, tc := range ok {
		got, err := ParseHandleKeys(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d keys; want %d", tc.name, len(got), len(tc.want))
		}
		for i := range got {
			if got[i].ID != tc.want[i].ID || !bytes.Equal(got[i].Secret, tc.want[i].Secret) {
				t.Fatalf("%s: key %d = %v; want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}

	bad := []struct{ name, in string }{
		{"empty", ""},
		{"blank", "  "},
		{"no colon", "k1" + std},
		{"no id", ":" + std},
		{"no secret", "k1:"},
		{"trailing comma", "k1:" + std + ","},
		{"empty entry", "k1:" + std + ",,k2:" + otherStd},
		{"bad base64", "k1:" + std[:10] + "!" + std[11:]},
		{"mixed alphabets", "k1:" + rawStd + "-_"},
		{"bad padding", "k1:" + rawStd + "="},
		{"short secret", "k1:" + base64.StdEncoding.EncodeToString(other[:31])},
		{"duplicate ids", "k1:" + std + ",k1:" + otherStd},
		{"bad id", "K1:" + std},
		{"long id", "abcdefghi:" + std},
		{"id with colon", "k:1:" + std},
	}
	for _, tc := range bad {
		keys, err := ParseHandleKeys(tc.in)
		if err == nil {
			t.Fatalf("%s: ParseHandleKeys(%q) = %v; want error", tc.name, tc.in, keys)
		}
		for _, s := range []string{std, rawStd, url, rawURL, otherStd, std[:12], otherStd[:12]} {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("%s: error %q contains secret material", tc.name, err)
			}
		}
	}
}

func TestFormatHandleKeysRoundTrip(t *testing.T) {
	t.Parallel()
	a, err := NewHandleKey("a1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewHandleKey("b2")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseHandleKeys(FormatHandleKeys([]HandleKey{a, b}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a1" || got[1].ID != "b2" || !bytes.Equal(got[0].Secret, a.Secret) || !bytes.Equal(got[1].Secret, b.Secret) {
		t.Fatalf("round trip = %v", got)
	}
}

func TestNewHandleKey(t *testing.T) {
	t.Parallel()
	a, err := NewHandleKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewHandleKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "k1" || len(a.Secret) < handleMinSecretLen {
		t.Fatalf("NewHandleKey = id %q, %d-byte secret", a.ID, len(a.Secret))
	}
	if bytes.Equal(a.Secret, b.Secret) {
		t.Fatal("two random keys are equal")
	}
	if bytes.Equal(a.Secret, make([]byte, len(a.Secret))) {
		t.Fatal("random key is all zeros")
	}
	if _, err := NewSigner([]HandleKey{a}); err != nil {
		t.Fatalf("NewSigner rejects NewHandleKey's key: %v", err)
	}
	for _, id := range []string{"", "K1", "abcdefghi", "a:b", "a,b"} {
		if _, err := NewHandleKey(id); err == nil {
			t.Fatalf("NewHandleKey(%q) succeeded", id)
		}
	}
}

func TestHandleKeyFormattingHidesSecret(t *testing.T) {
	t.Parallel()
	k := HandleKey{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef-SECRET")}
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v", k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), fmt.Sprint([]HandleKey{k}), fmt.Sprintf("%s", k)} {
		if strings.Contains(s, "SECRET") || strings.Contains(s, "48 49 50") || strings.Contains(s, "0123") {
			t.Fatalf("formatted key %q shows the secret", s)
		}
		if !strings.Contains(s, "k1") {
			t.Fatalf("formatted key %q hides the id", s)
		}
	}
}

func TestSignerConcurrent(t *testing.T) {
	t.Parallel()
	s := newTestSigner(t, testHandleKey("k2", 2), testHandleKey("k1", 1))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				org := fmt.Sprintf("org-%d", g)
				h := Handle{Kind: handleKinds[i%len(handleKinds)], Subject: fmt.Sprintf("s-%d-%d", g, i)}
				hs := s.Sign(org, h)
				if got, err := s.Verify(org, hs); err != nil || got != h {
					t.Errorf("Verify = %+v, %v; want %+v", got, err, h)
					return
				}
				if _, err := s.Verify(org+"x", hs); err != ErrBadHandle { //nolint:errorlint
					t.Errorf("other org: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkHandleVerify(b *testing.B) {
	s := newTestSigner(b)
	hs := s.Sign("org", Handle{Kind: HandleKindExtraction, Subject: "job-0193f2a4-7f3a"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Verify("org", hs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHandleVerifyGarbage(b *testing.B) {
	s := newTestSigner(b)
	hs := "job_" + strings.Repeat("A", handleMaxLen-handlePrefixLen)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Verify("org", hs); err == nil {
			b.Fatal("garbage verified")
		}
	}
}
