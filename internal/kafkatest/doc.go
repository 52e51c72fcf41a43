// Package kafkatest holds what the Kafka-backed tests of several packages
// share: waits on a cluster's metadata, which reaches its brokers one by
// one. It is internal: only docket's tests use it.
package kafkatest
