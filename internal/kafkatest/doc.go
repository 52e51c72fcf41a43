// Package kafkatest holds what the Kafka-backed tests of several packages
// share: deleting a topic, and waiting for one just created, both of which
// reach a cluster's brokers one by one. It is internal: only docket's tests
// use it.
package kafkatest
