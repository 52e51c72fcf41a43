package eventstore_test

import (
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/docket/docket/eventstore"
)

// TestConfluentConcurrentRegistration builds codecs for one new topic from
// two clients at once, as nodes that start together do: both must
// get the same schema ids. Apicurio refuses all but one concurrent
// creation of a subject with 409 (TestConfluentMigration failed that way
// in CI once); the codec asks again.
func TestConfluentConcurrentRegistration(t *testing.T) {
	t.Parallel()
	url := registryURL(t)
	topic := uniqueTopic("race")
	base, err := eventstore.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	const clients = 2
	codecs := make([]*eventstore.Codec, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := sr.NewClient(sr.URLs(url))
			if err == nil {
				codecs[i], err = base.WithRegistry(testCtx(t), cl, topic)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d of %d registering at once: %v", i, clients, err)
		}
	}
	for _, typ := range []string{"DocumentUploaded", "DocumentSucceeded", "WebhookDeliveryAttempted"} {
		want, ok := codecs[0].SchemaID(typ)
		if !ok {
			t.Fatalf("no schema id for %s", typ)
		}
		for i, c := range codecs[1:] {
			if got, _ := c.SchemaID(typ); got != want {
				t.Errorf("client %d: %s has id %d, client 0 %d", i+1, typ, got, want)
			}
		}
	}
}
