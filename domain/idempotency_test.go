package domain_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/docket/docket/domain"
)

func idemMeta(at time.Duration) domain.Meta {
	return domain.Meta{EventID: "ev", OrgID: "org_acme", OccurredAt: t0.Add(at)}
}

func claimKey(at time.Duration, hash, claim string) domain.Event {
	return &domain.IdempotencyKeyClaimed{Meta: idemMeta(at), Key: "k1", RequestHash: hash, ClaimID: claim}
}

func completeKey(at time.Duration, claim string) domain.Event {
	return &domain.IdempotencyKeyCompleted{Meta: idemMeta(at), Key: "k1", ClaimID: claim, Status: 201, Body: []byte(`{"id":"` + claim + `"}`)}
}

func releaseKey(at time.Duration, claim string) domain.Event {
	return &domain.IdempotencyKeyReleased{Meta: idemMeta(at), Key: "k1", ClaimID: claim}
}

type idemStep struct {
	e    domain.Event
	want error // nil: accepted
}

func TestIdempotencyApply(t *testing.T) {
	t.Parallel()
	const sec, timeout, retention = time.Second, domain.IdempotencyClaimTimeout, domain.IdempotencyRetention
	cases := []struct {
		name   string
		steps  []idemStep
		holder string // ClaimID at the end
		done   bool
	}{
		{"first claim wins", []idemStep{
			{claimKey(0, "h1", "c1"), nil},
			{claimKey(sec, "h1", "c2"), domain.ErrIdempotencyTaken},
			{claimKey(2*sec, "h2", "c3"), domain.ErrIdempotencyTaken},
		}, "c1", false},
		{"completion only by the holder", []idemStep{
			{claimKey(0, "h1", "c1"), nil},
			{completeKey(sec, "c2"), domain.ErrNotClaimHolder},
			{completeKey(2*sec, "c1"), nil},
			{completeKey(3*sec, "c1"), domain.ErrNotClaimHolder},
			{claimKey(4*sec, "h1", "c2"), domain.ErrIdempotencyTaken},
		}, "c1", true},
		{"completion of a free key", []idemStep{
			{completeKey(0, "c1"), domain.ErrNotClaimHolder},
		}, "", false},
		{"release frees the key", []idemStep{
			{claimKey(0, "h1", "c1"), nil},
			{releaseKey(sec, "c2"), domain.ErrNotClaimHolder},
			{releaseKey(2*sec, "c1"), nil},
			{releaseKey(3*sec, "c1"), domain.ErrNotClaimHolder},
			{claimKey(4*sec, "h1", "c2"), nil},
		}, "c2", false},
		{"no release after completion", []idemStep{
			{claimKey(0, "h1", "c1"), nil},
			{completeKey(sec, "c1"), nil},
			{releaseKey(2*sec, "c1"), domain.ErrNotClaimHolder},
		}, "c1", true},
		{"takeover only after the claim timeout", []idemStep{
			{claimKey(0, "h1", "c1"), nil},
			{claimKey(timeout, "h1", "c2"), domain.ErrIdempotencyTaken},
			{claimKey(timeout+sec, "h1", "c2"), nil},
			{completeKey(timeout+2*sec, "c1"), domain.ErrNotClaimHolder},
			{releaseKey(timeout+2*sec, "c1"), domain.ErrNotClaimHolder},
			{completeKey(timeout+3*sec, "c2"), nil},
		}, "c2", true},
		{"completed key kept for the retention", []idemStep{
			{claimKey(0, "h1", "c1"), nil},
			{completeKey(sec, "c1"), nil},
			{claimKey(2*timeout, "h1", "c2"), domain.ErrIdempotencyTaken},
			{claimKey(retention, "h1", "c2"), domain.ErrIdempotencyTaken},
			{claimKey(retention+sec, "h2", "c2"), nil},
		}, "c2", false},
		{"foreign event", []idemStep{
			{claimKey(0, "h1", "c1"), nil},
			{&domain.OrgCreated{Meta: idemMeta(sec), Name: "acme"}, domain.ErrNotClaimHolder},
		}, "c1", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r domain.Idempotency
			for i, st := range tc.steps {
				got, err := r.Apply(st.e)
				switch {
				case st.want == nil && err != nil:
					t.Fatalf("step %d (%s): %v", i, st.e.Type(), err)
				case st.want != nil && (!errors.Is(err, st.want) || !domain.IsNoop(err)):
					t.Fatalf("step %d (%s): err = %v, want no-op %v", i, st.e.Type(), err, st.want)
				case st.want != nil && !reflect.DeepEqual(got, r):
					t.Fatalf("step %d (%s): refused event changed state to %+v", i, st.e.Type(), got)
				}
				r = got
			}
			if r.ClaimID != tc.holder || r.Completed != tc.done {
				t.Errorf("end: claim=%q completed=%v, want %q %v", r.ClaimID, r.Completed, tc.holder, tc.done)
			}
		})
	}
}

func TestIdempotencyCompletedBodyIsCopied(t *testing.T) {
	t.Parallel()
	r, _ := domain.Idempotency{}.Apply(claimKey(0, "h1", "c1"))
	c := completeKey(time.Second, "c1").(*domain.IdempotencyKeyCompleted)
	r, err := r.Apply(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Body[0] = 'X'
	if r.Status != 201 || string(r.Body) != `{"id":"c1"}` {
		t.Errorf("stored response = %d %s", r.Status, r.Body)
	}
}

func TestIdempotencyCheck(t *testing.T) {
	t.Parallel()
	fold := func(evs ...domain.Event) domain.Idempotency {
		var r domain.Idempotency
		for _, e := range evs {
			n, err := r.Apply(e)
			if err != nil {
				t.Fatalf("setup %s: %v", e.Type(), err)
			}
			r = n
		}
		return r
	}
	running := fold(claimKey(0, "h1", "c1"))
	done := fold(claimKey(0, "h1", "c1"), completeKey(time.Second, "c1"))
	released := fold(claimKey(0, "h1", "c1"), releaseKey(time.Second, "c1"))
	timeout, retention := domain.IdempotencyClaimTimeout, domain.IdempotencyRetention
	cases := []struct {
		name  string
		state domain.Idempotency
		hash  string
		now   time.Duration
		want  domain.Verdict
	}{
		{"free key", domain.Idempotency{}, "h1", 0, domain.VerdictProceed},
		{"released key", released, "h1", 2 * time.Second, domain.VerdictProceed},
		{"same request running", running, "h1", time.Second, domain.VerdictInProgress},
		{"same request running at the timeout", running, "h1", timeout, domain.VerdictInProgress},
		{"other request running", running, "h2", time.Second, domain.VerdictMismatch},
		{"abandoned claim", running, "h1", timeout + time.Second, domain.VerdictProceed},
		{"abandoned claim, other request", running, "h2", timeout + time.Second, domain.VerdictProceed},
		{"same request completed", done, "h1", 2 * time.Second, domain.VerdictReplay},
		{"completed, past the claim timeout", done, "h1", 2 * timeout, domain.VerdictReplay},
		{"completed at the retention", done, "h1", retention, domain.VerdictReplay},
		{"other request completed", done, "h2", time.Hour, domain.VerdictMismatch},
		{"completed, retention over", done, "h1", retention + time.Second, domain.VerdictProceed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.state.Check(tc.hash, t0.Add(tc.now)); got != tc.want {
				t.Errorf("Check(%s, +%v) = %d, want %d", tc.hash, tc.now, got, tc.want)
			}
		})
	}
}

func TestOrgAndApiKeyApply(t *testing.T) {
	t.Parallel()
	created := &domain.OrgCreated{Meta: idemMeta(0), Name: "acme"}
	created.Meta.OrgID = domain.OrgID("acme")
	o, err := domain.Org{}.Apply(created)
	if err != nil || o.ID != "org_acme" || o.Name != "acme" || !o.CreatedAt.Equal(t0) {
		t.Fatalf("OrgCreated: %+v, %v", o, err)
	}
	again, err := o.Apply(&domain.OrgCreated{Meta: idemMeta(time.Second), Name: "acme"})
	if !errors.Is(err, domain.ErrOrgExists) || !domain.IsNoop(err) || again != o {
		t.Errorf("second OrgCreated: %+v, %v", again, err)
	}

	issue := &domain.ApiKeyIssued{Meta: idemMeta(0), KeyID: "key1", KeyHash: "sha256:ab", Label: "ci"}
	revoke := &domain.ApiKeyRevoked{Meta: idemMeta(time.Second), KeyID: "key1"}
	steps := []struct {
		k    domain.ApiKey
		e    domain.Event
		want error
	}{
		{domain.ApiKey{}, revoke, domain.ErrUnknownKey},
		{domain.ApiKey{}, created, domain.ErrUnknownKey},
		{domain.ApiKey{ID: "key1", OrgID: "org_acme"}, issue, domain.ErrKeyExists},
		{domain.ApiKey{ID: "key1", Revoked: true}, revoke, domain.ErrUnknownKey},
	}
	for i, st := range steps {
		got, err := st.k.Apply(st.e)
		if !errors.Is(err, st.want) || !domain.IsNoop(err) || got != st.k {
			t.Errorf("case %d (%s): %+v, %v; want unchanged, %v", i, st.e.Type(), got, err, st.want)
		}
	}
	k, err := domain.ApiKey{}.Apply(issue)
	if err != nil || k.ID != "key1" || k.Hash != "sha256:ab" || k.Label != "ci" || k.Revoked {
		t.Fatalf("issue: %+v, %v", k, err)
	}
	if k, err = k.Apply(revoke); err != nil || !k.Revoked {
		t.Errorf("revoke: %+v, %v", k, err)
	}
}
