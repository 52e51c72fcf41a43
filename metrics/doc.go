// Package metrics is docket's Prometheus instrumentation: one registry per
// node, the counters and histograms the components feed through small hooks
// (eventstore.OnAppend, worker.Observe, the API's Observer, the webhook
// poster, projections.OnApplied), and a collector that reads gauges at
// scrape time from the views and the broker (projection lag, work queue
// depth, documents per status), so nothing has to keep them up to date.
//
// Every series is per node. Series derived from the views (documents per
// status, end-to-end latency) are reported by every node that runs
// projections, so aggregate them across nodes with max or avg, not sum.
package metrics
