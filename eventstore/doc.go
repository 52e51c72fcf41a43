// Package eventstore is docket's event log on Kafka: it appends domain
// events, reads them back, and hands out work, always through franz-go, so
// that the same code runs on the embedded broker (StartEmbedded) and on an
// Apache Kafka cluster.
//
// The event topic is the source of truth; everything else (views, webhook
// deliveries, the work topic) is derived from it and can be rebuilt. Four
// decisions follow from that:
//
//   - The topic keeps every event: it is created with no retention and no
//     compaction, Open logs an error when an existing one deletes events,
//     and a Reader never moves past offsets the log no longer holds
//     (ErrLogTruncated).
//   - Appends are acknowledged only when the log has them: an idempotent
//     producer with acks=all, so a retry never duplicates a record and an
//     acknowledged event survives what min.insync.replicas allows. A
//     partition's appends go out in rounds (AppendRounds): those that
//     arrive while its round is unacknowledged share the next request,
//     which is how a busy partition's requests fill without a linger. An
//     append that would start a round may wait RoundLinger for company
//     first, so that an idle partition's appends share requests too.
//   - One organisation's events share a key, and so a partition: they are
//     totally ordered, and a fold per organisation needs no cross-partition
//     coordination. Store.PartitionFor names the partition without
//     appending. The hash is over the partition count recorded in the
//     layout topic when docket first met the topic (layout.go), so that
//     partitions an operator adds later cannot move an org's next events
//     away from its history.
//   - Records are readable without docket: Avro in the single-object
//     encoding (or the Confluent wire format with a schema registry), the
//     schemas in package schemas, the event type in the docket-type header
//     so that consumers can route without decoding.
//
// Readers (Store.NewReader) take their own offsets and no consumer group,
// because a projection stores its offsets with its views; group members
// (Store.JoinGroup) are for the duties, which need partition ownership,
// and the workers, which share the work topic.
//
// Limits are drawn once, in one place: the codec refuses an event it could
// not decode again (MaxEncodedSize, MaxArrayLen), and the producer and the
// topics the store creates agree on the largest record (MaxRecordBytes), so
// a result that is too large fails with ErrTooLarge instead of being retried.
// Errors are classified with errors.Is against the sentinels in errors.go;
// IsRetryable says which may succeed if repeated.
package eventstore
