// Package projections builds docket's read models in Pebble from the event
// log, and runs the duties that only a partition's owner performs.
//
// Every node projects every partition. A fetch is applied in one Pebble
// batch that also stores the next offset of each partition it touched, so a
// crash between the two cannot happen and views are applied exactly once;
// consumer-group commits play no part. Because the fold is deterministic,
// rebuilding from offset 0 gives byte-identical views. For the same reason
// the views may do without a write-ahead log (WithoutWAL): what a crash
// loses of them is then a tail of whole fetches, with its offsets, which is
// applied again from the log.
//
// When the next fetch is already waiting, it folds while the one before it
// commits (Pipeline), reading that fetch's writes from its maps until
// Pebble has them; commits stay one at a time, in the log's order.
package projections
