package eventstore

import (
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic names used unless overridden.
const (
	DefaultEventsTopic = "docket.events"
	DefaultWorkTopic   = "docket.work"
)

// DefaultMaxRecordBytes is the largest record batch the store produces
// unless MaxRecordBytes says otherwise: MaxEncodedSize, the largest event
// the codec writes, plus 1 MiB for its key, headers, encoding header and
// the batch's framing. Kafka's own default (a broker's message.max.bytes,
// 1 MiB) would refuse the result of an invoice of about 20,000 line items
// that the codec, the upload limit and the views all accept.
const DefaultMaxRecordBytes = MaxEncodedSize + 1<<20

type config struct {
	prefix      string
	eventsTopic string
	workTopic   string
	layoutTopic string
	partitions  int32
	replication int16
	minISR      int
	log         zerolog.Logger
	clientID    string
	noCreate    bool
	registry    string
	onAppend    func(eventType string)
	retries     int
	hooks       []kgo.Hook
	maxRecord   int32
	linger      time.Duration
	rounds      int
	roundLinger time.Duration
	// deliveryTimeout is DeliveryTimeout's.
	deliveryTimeout time.Duration
}

func defaults() config {
	return config{
		prefix:      "docket",
		eventsTopic: DefaultEventsTopic,
		workTopic:   DefaultWorkTopic,
		layoutTopic: DefaultLayoutTopic,
		partitions:  12,
		replication: -1,
		log:         zerolog.Nop(),
		clientID:    "docket",
		retries:     20,
		maxRecord:   DefaultMaxRecordBytes,

		deliveryTimeout: 30 * time.Second,
		rounds:          1,
	}
}

// Opt configures a Store.
type Opt func(*config)

// Prefix names the topics "<prefix>.events", "<prefix>.work" and
// "<prefix>.layout" and the consumer groups "<prefix>-duties" and
// "<prefix>-workers", so that several deployments (or tests) can share one
// cluster. Default "docket".
func Prefix(p string) Opt {
	return func(c *config) {
		c.prefix, c.eventsTopic, c.workTopic, c.layoutTopic = p, p+".events", p+".work", p+".layout"
	}
}

// EventsTopic names the event log topic. Default "docket.events".
func EventsTopic(name string) Opt { return func(c *config) { c.eventsTopic = name } }

// WorkTopic names the work topic. Default "docket.work".
func WorkTopic(name string) Opt { return func(c *config) { c.workTopic = name } }

// LayoutTopic names the topic that records the partition counts of the
// event and work topics (layout.go). Default "docket.layout".
func LayoutTopic(name string) Opt { return func(c *config) { c.layoutTopic = name } }

// Partitions is the partition count used when the topics are created.
// Existing topics keep theirs: the count recorded in the layout topic when
// docket first met them, even if partitions were added since. Default 12.
func Partitions(n int32) Opt { return func(c *config) { c.partitions = n } }

// ReplicationFactor is used when the topics are created. Default -1, the
// broker's default.replication.factor.
func ReplicationFactor(n int16) Opt { return func(c *config) { c.replication = n } }

// MinInsyncReplicas sets min.insync.replicas on created topics. Default 0:
// the broker's setting.
func MinInsyncReplicas(n int) Opt { return func(c *config) { c.minISR = n } }

// MaxRecordBytes is the largest record batch the store produces (franz-go's
// ProducerBatchMaxBytes) and the max.message.bytes of the topics it
// creates, so that the producer and the broker draw the line at the same
// size. An append whose record is larger fails with ErrTooLarge, before
// it is sent. Topics that already exist keep their max.message.bytes;
// Open logs a warning when the event topic's is smaller. Open refuses a
// value under 64 KiB. Default DefaultMaxRecordBytes (17 MiB).
func MaxRecordBytes(n int32) Opt { return func(c *config) { c.maxRecord = n } }

// Linger is how long the producer holds a partition's first unsent record
// for more before it sends them (franz-go's ProducerLinger). With none, a
// record goes out as soon as fewer than five requests are in flight to its
// broker, so at a moderate load most requests carry one or two records;
// on the bench's log at 600 documents/s, 1 ms halved the Kafka requests
// per document and cut the broker's CPU per document by two fifths
// (BENCHMARKS.md), while every append waits up to that long more. Open
// refuses a negative value. Default 0.
func Linger(d time.Duration) Opt { return func(c *config) { c.linger = d } }

// AppendRounds is how many rounds of appends each partition may have
// unacknowledged at once (rounds.go). An append to a partition with fewer
// in flight goes out at once. One that finds n in flight waits, and every
// append that waited goes out together, usually in one request, when one
// of them is acknowledged (group commit): a busy partition's requests carry
// many records, and an idle one's append waits for nothing. 0 leaves it to
// franz-go, which sends a record as soon as fewer than five requests are in
// flight to its broker, so that at a moderate load most requests carry one
// or two records. A Linger turns rounds off: it gathers records by waiting,
// and a round held back behind a lingering one would wait twice. An
// append's time in the queue counts towards its DeliveryTimeout. Open
// refuses a negative value. Default 1.
func AppendRounds(n int) Opt { return func(c *config) { c.rounds = n } }

// RoundLinger is how long, at most, an append that would start its
// partition's round (AppendRounds: with the default 1, one that finds no
// round in flight) waits for other appends first. At a moderate load,
// without it, most appends find their partition idle and each is a produce
// request, and a fetch for every consumer, of its own. An append that
// finds all its partition's rounds in flight waits for one of them anyway
// and never lingers, so a busy partition's appends wait no longer than
// without it; unlike Linger, it leaves rounds on. It needs AppendRounds:
// with none (or with a Linger) it has no effect. Open refuses a negative
// value. Default 0: none.
func RoundLinger(d time.Duration) Opt { return func(c *config) { c.roundLinger = d } }

// DeliveryTimeout bounds how long an append waits for its
// acknowledgement before it fails (franz-go's RecordDeliveryTimeout).
// franz-go counts it from the record's timestamp, which the store sets to
// the time of the append, before any wait for a round; records produced
// through Client with older timestamps of their own (docket copy-log keeps
// those of the log it copies) would fail at once, and need 0: no bound but
// the context's.
// Open refuses a negative value. Default 30 s.
func DeliveryTimeout(d time.Duration) Opt { return func(c *config) { c.deliveryTimeout = d } }

// Logger receives the store's logs. Default: discard.
func Logger(l zerolog.Logger) Opt { return func(c *config) { c.log = l } }

// ClientID is the Kafka client id. Default "docket".
func ClientID(id string) Opt { return func(c *config) { c.clientID = id } }

// ReadOnly opens an existing deployment's topics without creating them, and
// fails with ErrNoTopic when the event topic does not exist: tools that only
// read the log (docket events, replay, verify) must not leave a new, empty
// topic behind after a mistyped prefix. Default: create missing topics.
func ReadOnly() Opt { return func(c *config) { c.noCreate = true } }

// SchemaRegistry writes events in the Confluent wire format (00, 4-byte
// schema id, Avro body) with schemas registered at this Confluent-API
// schema registry URL, and reads both that format and the single-object
// encoding, so a topic can be migrated. Default "": single-object encoding,
// no registry.
func SchemaRegistry(url string) Opt { return func(c *config) { c.registry = url } }

// OnAppend calls fn with the type of every event once its append is
// acknowledged (metrics count appends with it). Default: none.
func OnAppend(fn func(eventType string)) Opt { return func(c *config) { c.onAppend = fn } }

// RequestRetries is how many times the Kafka client retries a request that
// failed with a retriable error before the store sees the error. The store
// then retries on its own where it can (EndOffsets does), so a smaller value
// trades fewer silent waits for earlier logging. Default 20, franz-go's.
func RequestRetries(n int) Opt { return func(c *config) { c.retries = n } }

// KafkaHooks adds franz-go hooks to every Kafka client the store makes: its
// producer, its readers (NewReader) and its group members (JoinGroup), so
// that one hook sees all of a node's Kafka traffic (metrics count requests
// with it). Default: none.
func KafkaHooks(hooks ...kgo.Hook) Opt {
	return func(c *config) { c.hooks = append(c.hooks, hooks...) }
}

// hookOpts are the hooks as client options; none without hooks.
func (c config) hookOpts() []kgo.Opt {
	if len(c.hooks) == 0 {
		return nil
	}
	return []kgo.Opt{kgo.WithHooks(c.hooks...)}
}
