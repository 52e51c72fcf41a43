package eventstore_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/docket/docket/eventstore"
)

// uniqueTopic names a topic no other test registers subjects for.
func uniqueTopic(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:]) + ".events"
}

// registryProxy serves the real registry at target through a loopback
// reverse proxy that calls before with each request first, and returns the
// proxy's URL for the same API path.
func registryProxy(t *testing.T, target *url.URL, before func(*http.Request)) string {
	t.Helper()
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		before(r)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + target.Path
}

// TestConfluentRegistrationOutlivesALateAnswer puts a loopback proxy in
// front of the real registry that holds the first registration past the
// client's timeout before passing it on, as Apicurio's row locks did in
// CI: the codec must ask again and get the ids the registry gave.
func TestConfluentRegistrationOutlivesALateAnswer(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(registryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	const clientTimeout = 500 * time.Millisecond
	var posts, held atomic.Int32
	proxied := registryProxy(t, target, func(r *http.Request) {
		if r.Method == http.MethodPost && posts.Add(1) == 1 {
			held.Add(1)
			time.Sleep(3 * clientTimeout)
		}
	})
	cl, err := sr.NewClient(sr.URLs(proxied), sr.HTTPClient(&http.Client{Timeout: clientTimeout}))
	if err != nil {
		t.Fatal(err)
	}
	base, err := eventstore.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	topic := uniqueTopic("late")
	codec, err := base.WithRegistry(testCtx(t), cl, topic)
	if err != nil {
		t.Fatalf("WithRegistry with the first answer late: %v", err)
	}
	if held.Load() != 1 {
		t.Fatalf("the proxy held %d registrations, want 1", held.Load())
	}

	direct, err := sr.NewClient(sr.URLs(target.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"ApiKeyIssued", "DocumentUploaded", "DocumentSucceeded"} {
		got, ok := codec.SchemaID(typ)
		if !ok {
			t.Fatalf("no schema id for %s", typ)
		}
		want, err := direct.SchemaByVersion(testCtx(t), eventstore.Subject(topic, typ), -1)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if got != want.ID {
			t.Errorf("%s: codec has id %d, the registry %d", typ, got, want.ID)
		}
	}
}

// TestConfluentIncompatibleSchemaFails makes a subject hold a schema the
// current one cannot read under BACKWARD compatibility: the registry
// refuses with 409, the same status as a colliding registration that is
// asked again, so the codec must ask again a few times and then give up,
// saying why.
func TestConfluentIncompatibleSchemaFails(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(registryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	topic := uniqueTopic("incompatible")
	subject := eventstore.Subject(topic, "DocumentUploaded")
	var asked atomic.Int32
	proxied := registryProxy(t, target, func(r *http.Request) {
		if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/subjects/"+subject+"/") {
			asked.Add(1)
		}
	})
	cl, err := sr.NewClient(sr.URLs(proxied))
	if err != nil {
		t.Fatal(err)
	}
	old := `{"type":"record","name":"DocumentUploaded","namespace":"docket.events","fields":[{"name":"legacy","type":"int"}]}`
	if _, err := cl.CreateSchema(testCtx(t), subject, sr.Schema{Schema: old, Type: sr.TypeAvro}); err != nil {
		t.Fatal(err)
	}
	for _, res := range cl.SetCompatibility(testCtx(t), sr.SetCompatibility{Level: sr.CompatBackward}, subject) {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	base, err := eventstore.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	_, err = base.WithRegistry(testCtx(t), cl, topic)
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusConflict {
		t.Fatalf("WithRegistry over an incompatible schema: %v, want a 409 from the registry", err)
	}
	if !errors.Is(err, eventstore.ErrRegistryRefused) || eventstore.IsRetryable(err) {
		t.Errorf("%v: want eventstore.ErrRegistryRefused, and not retryable", err)
	}
	// One registration made the subject; the codec's are the rest.
	if n := asked.Load() - 1; n < 2 || n > 10 {
		t.Errorf("the codec registered the incompatible schema %d times, want a few (2 to 10)", n)
	}
}
