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
// under its key only by an atomic rename of a fully written and fsynced
// temporary file, followed by an fsync of the directory, so a key that
// exists always names complete bytes. Temporary files live in a tmp
// directory inside the store because rename is only atomic within one
// filesystem, and because that gives NewFS one place to sweep after a crash.
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
