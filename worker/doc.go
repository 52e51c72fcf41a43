// Package worker consumes docket.work and runs document processing.
//
// A worker records a claim (ProcessingStarted with a fresh claim id) before
// it starts and tags every result with that claim, so the fold can fence off
// results from any run that a later claim superseded. It commits a work
// item's offset only once the item's outcome is in the log; a worker that
// dies mid-document leaves the item uncommitted, another member re-reads it,
// claims again and supersedes the dead run. Nothing is lost, and because
// only the current claim's result counts, nothing is counted twice.
package worker
