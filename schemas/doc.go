// Package schemas holds the Avro schemas of docket's events: the public
// contract of the docket.events topic (DESIGN.md, invariant 9).
//
// There is one .avsc file per event type, named after the type
// (DocumentUploaded.avsc), in namespace docket.events, plus the shared
// records Meta.avsc and LineItem.avsc that the event schemas reference by
// name. history/ keeps every released version of every file as
// <Type>.v<N>.avsc; released versions are frozen and the current files may
// only evolve compatibly from them (new fields need defaults).
//
// The files are embedded in FS. Parse resolves them into one avro.Schema per
// event type. CanonicalForm and Fingerprint compute the Avro Parsing
// Canonical Form and its CRC-64-AVRO fingerprint as the Avro specification
// defines them, which is what the single-object encoding on the topic
// carries. README.md describes the wire format for consumers in any
// language.
package schemas
