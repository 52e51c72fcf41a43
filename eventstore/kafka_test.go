package eventstore_test

// Shared harness for the tests that talk to a broker. They run unchanged
// against two kinds of broker, chosen the way franz-go's own tests use
// KGO_SEEDS:
//
//   - DOCKET_TEST_KAFKA_BROKERS empty or unset: every test starts its own
//     embedded broker (StartEmbedded in a temporary directory, 4 partitions)
//     and closes it when it ends.
//   - DOCKET_TEST_KAFKA_BROKERS=host:port,host:port: every test uses that
//     cluster, under its own topic prefix, and deletes its topics and
//     consumer groups when it ends.
//
// Every test gets a unique prefix ("test-<test name>-<random>"), so topics
// and groups never collide between tests, parallel runs or earlier runs
// against the same cluster.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// brokersEnv names the seed brokers of a real cluster to test against.
const brokersEnv = "DOCKET_TEST_KAFKA_BROKERS"

// testPartitions is the partition count of the test topics (and of the
// embedded broker's default).
const testPartitions = 4

// testTimeout bounds every test's broker operations.
const testTimeout = 30 * time.Second

var logBrokerKindOnce sync.Once

// realSeeds returns the seeds from DOCKET_TEST_KAFKA_BROKERS, or nil when the
// tests should use embedded brokers.
func realSeeds() []string {
	var seeds []string
	for _, s := range strings.Split(os.Getenv(brokersEnv), ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// onRealKafka reports whether the tests run against a real cluster.
func onRealKafka() bool { return len(realSeeds()) > 0 }

// skipOnRealKafka skips tests of the embedded broker itself.
func skipOnRealKafka(t *testing.T) {
	t.Helper()
	if onRealKafka() {
		t.Skipf("embedded broker only: %s is set, so this run tests a real Kafka cluster", brokersEnv)
	}
}

// brokers returns seeds for this test: the real cluster's, or those of a
// fresh embedded broker that is closed when the test ends.
func brokers(t *testing.T) []string {
	t.Helper()
	seeds := realSeeds()
	logBrokerKindOnce.Do(func() {
		if len(seeds) > 0 {
			t.Logf("eventstore tests: real Kafka at %s (%s)", strings.Join(seeds, ","), brokersEnv)
		} else {
			t.Logf("eventstore tests: embedded broker per test (set %s to use a real cluster)", brokersEnv)
		}
	})
	if len(seeds) > 0 {
		return seeds
	}
	e, err := eventstore.StartEmbedded(t.TempDir(), "127.0.0.1:0", testPartitions)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(e.Close)
	return []string{e.Addr()}
}

// testPrefix is a topic and group prefix unique to this test and run. Kafka
// topic names allow [a-zA-Z0-9._-]; '_' and '.' collide in metric names, so
// everything else becomes '-'.
func testPrefix(t *testing.T) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 150 {
		name = name[:150]
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "test-" + name + "-" + hex.EncodeToString(b[:])
}

// prefixOf recovers the prefix a store was opened with.
func prefixOf(s *eventstore.Store) string {
	return strings.TrimSuffix(s.EventsTopic(), ".events")
}

// setup opens a store under a prefix unique to the test, on an embedded
// broker or on the cluster named by DOCKET_TEST_KAFKA_BROKERS. The store is
// closed, and on a real cluster the test's topics and groups deleted, when
// the test ends.
func setup(t *testing.T) (*eventstore.Store, []string) {
	t.Helper()
	seeds, prefix := testPlace(t)
	s := openStore(t, seeds, eventstore.Prefix(prefix), eventstore.Partitions(testPartitions))
	return s, seeds
}

// testPlace is setup without the store: the brokers, and a prefix whose
// topics and groups are deleted from a real cluster when the test ends.
// Call it before opening stores on the prefix, so that the deletion is
// registered before their Close and runs after it.
func testPlace(t *testing.T) (seeds []string, prefix string) {
	t.Helper()
	seeds, prefix = brokers(t), testPrefix(t)
	if onRealKafka() {
		t.Cleanup(func() { deleteTestResources(t, seeds, prefix) })
	}
	return seeds, prefix
}

// openStore opens a store and closes it when the test ends.
func openStore(t *testing.T, seeds []string, opts ...eventstore.Opt) *eventstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s, err := eventstore.Open(ctx, seeds, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// deleteTestResources removes the topics and consumer groups under prefix
// from a real cluster.
func deleteTestResources(t *testing.T, seeds []string, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Logf("cleanup %s: %v", prefix, err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if groups, err := adm.ListGroups(ctx); err != nil {
		t.Logf("cleanup %s: list groups: %v", prefix, err)
	} else {
		var mine []string
		for _, g := range groups.Groups() {
			if strings.HasPrefix(g, prefix+"-") {
				mine = append(mine, g)
			}
		}
		if len(mine) > 0 {
			if _, err := adm.DeleteGroups(ctx, mine...); err != nil {
				t.Logf("cleanup %s: delete groups: %v", prefix, err)
			}
		}
	}
	resp, err := adm.DeleteTopics(ctx, prefix+".events", prefix+".work", prefix+".layout")
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Logf("cleanup %s: delete topics: %v", prefix, err)
	}
}

// testCtx is bounded by testTimeout and ends with the test.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// rawClient is a plain kgo client on the test's brokers.
func rawClient(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeRaw reads n records of topic from the start of every partition with
// a plain client.
func consumeRaw(t *testing.T, seeds []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := rawClient(t, seeds,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d of %d records: %v", topic, len(out), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("consume %s/%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	if len(out) != n {
		t.Fatalf("consume %s: got %d records, want %d", topic, len(out), n)
	}
	return out
}

// readN polls r until it has returned n records.
func readN(t *testing.T, r *eventstore.Reader, n int) []eventstore.Record {
	t.Helper()
	ctx := testCtx(t)
	var out []eventstore.Record
	for len(out) < n {
		recs, err := r.Poll(ctx, n-len(out))
		if err != nil {
			t.Fatalf("Poll: got %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	if len(out) != n {
		t.Fatalf("Poll returned %d records, want %d", len(out), n)
	}
	return out
}

// newReader opens a reader that is closed when the test ends.
func newReader(t *testing.T, s *eventstore.Store, from map[int32]int64) *eventstore.Reader {
	t.Helper()
	r, err := s.NewReader(from)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// fromStart maps every partition of s to offset 0.
func fromStart(s *eventstore.Store) map[int32]int64 {
	from := make(map[int32]int64, s.Partitions())
	for p := range s.Partitions() {
		from[p] = 0
	}
	return from
}

// orgsByPartition returns, for every partition of s, an org id whose events
// land there (ids "<base>-<n>", the first found for each partition).
func orgsByPartition(t *testing.T, s *eventstore.Store, base string) map[int32]string {
	t.Helper()
	out := make(map[int32]string, s.Partitions())
	for i := 0; len(out) < int(s.Partitions()); i++ {
		if i > 10000 {
			t.Fatalf("no org id for every partition: %v", out)
		}
		org := base + "-" + strconv.Itoa(i)
		if p := s.PartitionFor(org); out[p] == "" {
			out[p] = org
		}
	}
	return out
}

// sampleEvent returns the n-th of a rotation of events of org, with every
// field set (non-empty slices, set pointers) so that a decoded copy must
// equal it field by field.
func sampleEvent(org string, n int) domain.Event {
	meta := eventstore.NewMeta(org, "actor-"+strconv.Itoa(n), "corr-"+strconv.Itoa(n))
	doc := "doc-" + org + "-" + strconv.Itoa(n)
	batch, ref, cur := "batch-"+strconv.Itoa(n), "ref-"+strconv.Itoa(n), "EUR"
	switch n % 5 {
	case 0:
		return &domain.OrgCreated{Meta: meta, Name: "Org " + org}
	case 1:
		return &domain.DocumentUploaded{Meta: meta, DocumentID: doc, BatchName: &batch,
			FileName: "invoice-" + strconv.Itoa(n) + ".pdf", ContentType: "application/pdf",
			Size: int64(1000 + n), BlobKey: "sha256/" + strconv.Itoa(n), Reference: &ref}
	case 2:
		return &domain.DocumentQueued{Meta: meta, DocumentID: doc, Phase: domain.PhaseFull,
			Attempt: n, JobIDs: []string{"job-a-" + strconv.Itoa(n), "job-b"}, Force: n%2 == 0}
	case 3:
		return &domain.DocumentSucceeded{Meta: meta, DocumentID: doc, ClaimID: "claim-" + strconv.Itoa(n),
			Currency: &cur, LineItems: []domain.LineItem{
				{Description: "widget", Quantity: 2, UnitPrice: 1.25, Amount: 2.5},
				{Description: "gadget é✓", Quantity: 1, UnitPrice: 10, Amount: 10},
			}}
	default:
		return &domain.IdempotencyKeyCompleted{Meta: meta, Key: "idem-" + strconv.Itoa(n),
			ClaimID: "claim-" + strconv.Itoa(n), Status: 201, Body: []byte{0, 1, 2, 0xff, byte(n)}}
	}
}

// appendOK appends events and fails the test on error.
func appendOK(t *testing.T, s *eventstore.Store, events ...domain.Event) []eventstore.Position {
	t.Helper()
	pos, err := s.Append(testCtx(t), events...)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if len(pos) != len(events) {
		t.Fatalf("Append returned %d positions for %d events", len(pos), len(events))
	}
	return pos
}
