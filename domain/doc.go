// Package domain holds docket's events, aggregates and rules.
//
// It is pure on purpose: no I/O, no clock, no randomness, no Kafka, Pebble or
// Avro. Every node folds the same log through these functions, so anything
// that could differ between nodes (time, ids) must arrive inside an event.
//
// State is rebuilt with Apply (a fold). An event that is not a legal
// transition for the state it meets is a recorded no-op: Apply returns the
// state unchanged together with an error that IsNoop reports true for, and
// every node reaches the same verdict because it depends only on log order.
package domain
