package projections_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/projections"
)

// TestKeyByHashSeesRevocationAfterCachedRead: a key read (and cached) before
// its revocation is applied must read as revoked right after the apply.
func TestKeyByHashSeesRevocationAfterCachedRead(t *testing.T) {
	t.Parallel()
	f, l := setup(t), newLog()
	f.apply(l.record(0, &domain.ApiKeyIssued{Meta: meta("o1", 1), KeyID: "key_1", KeyHash: "h1", Label: "ci"}))
	for range 2 { // the second read comes from the cache
		k, err := f.v.KeyByHash("h1")
		if err != nil || k.Revoked || k.ID != "key_1" {
			t.Fatalf("before revoke: %+v %v", k, err)
		}
	}
	f.apply(l.record(0, &domain.ApiKeyRevoked{Meta: meta("o1", 2), KeyID: "key_1"}))
	if k, err := f.v.KeyByHash("h1"); err != nil || !k.Revoked {
		t.Fatalf("after revoke: %+v %v", k, err)
	}
	if _, err := f.v.KeyByHash("nope"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}
}

// TestKeyByHashRacingRevocation reads a key while its revocation is
// applied; once the apply returned, every read must see it revoked.
func TestKeyByHashRacingRevocation(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		f, l := setup(t), newLog()
		f.apply(l.record(0, &domain.ApiKeyIssued{Meta: meta("o1", 1), KeyID: "key_1", KeyHash: "h1", Label: "ci"}))
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
						_, _ = f.v.KeyByHash("h1")
					}
				}
			}()
		}
		f.apply(l.record(0, &domain.ApiKeyRevoked{Meta: meta("o1", 2), KeyID: "key_1"}))
		close(stop)
		wg.Wait()
		if k, err := f.v.KeyByHash("h1"); err != nil || !k.Revoked {
			t.Fatalf("round %d: after revoke: %+v %v", i, k, err)
		}
	}
}
