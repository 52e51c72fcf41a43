// Package blobstore keeps the bytes of uploaded documents, addressed by the
// hex SHA-256 of their content.
//
// Content addressing makes a stored blob immutable and makes uploads
// idempotent: the same document uploaded twice (a client retry, a duplicate
// submission) is stored once, and the key recorded in an event is also a
// checksum anyone can verify later. Events carry only the key; the bytes
// live here because they are too large to replicate through the log.
//
// Store is an interface because the filesystem is only the first backend;
// object storage will follow behind the same contract.
//
// FS is written for crashes, not just for errors. A blob becomes visible
// under its key only by an atomic rename of a fully written temporary
// file, and only once its bytes are durable: a blob of up to JournalMax
// bytes (1 MiB) through a record in the store's journal, whose fdatasync
// concurrent Puts share (journal.go); a larger one by an fsync of the file
// before the rename and of its directory after. After a machine crash a
// key may name a file whose data never reached the disk, until the next
// NewFS on the directory rewrites it from the journal; a process crash
// loses nothing, since the page cache outlives it. Close, at a node's
// stop, makes the journal's blobs durable on their own and removes the
// store's temporary directory, leaving the next NewFS nothing to recover.
// A journal whose segment was removed from under the store (its link count
// is 0 after a sync, or at one of the checks the journal makes every
// JournalWatch, 1 s, so that a removal is caught without uploads) fails:
// whoever noticed first makes the lost records' blobs durable with a
// checkpoint (a Put that does fails if that fails; JournalStats says how
// it ended, and the Logger option's logger too), and every Put from then
// on fsyncs its own file and directory.
//
// Temporary files live in a tmp directory inside the store because rename
// is only atomic within one filesystem, and because that gives NewFS one
// place to sweep after a crash.
// Nodes on one machine may share the directory, so each store writes under
// tmp/<id>, holds a lock on tmp/<id>.lock while it lives, and NewFS sweeps
// only the directories whose lock is free: a node that starts never takes
// away the temporary file of another node's upload in flight.
//
// The size limit is enforced while streaming, not after, so an oversized or
// hostile upload costs at most the limit in disk and reading, never the full
// body. Keys are validated before any path is built from them, so a key
// arriving from a request can never name a file outside the store.
package blobstore
