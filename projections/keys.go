package projections

import "encoding/binary"

// Key layout. Components are joined with '/', which none of the ids, org ids
// or batch names may contain (domain validates them).
//
//	o/<partition u32>                 next offset to apply
//	d/<org>/<doc>                     document view
//	bd/<org>/<batch>/<seq>/<doc>      batch membership in upload order
//	b/<org>/<batch>                   batch view
//	org/<org>                         organisation
//	k/<key hash>                      api key by hash
//	kid/<key id>                      key hash by key id
//	ko/<org>/<key id>                 key hash, per org
//	i/<org>/<idempotency key>         idempotency record
//	j/<org>/<job>                     job view
//	dj/<org>/<doc>/<job>              jobs covering a document
//	s/<org>/<session>                 extraction session -> job id
//	h/<kind>/<org>/<id>/<window pos>  history index: positions (history.go)
//	he/<partition u32><window u64>    indexed events, a window of offsets each (history.go)
//	meta/history                      the views have indexed history since offset 0
//	meta/log                          the event log the views are built from (logid.go)
//	ph/<status>                       documents per status (every org), u64
const (
	prefixOffset = "o/"
)

func offsetKey(p int32) []byte {
	k := make([]byte, len(prefixOffset)+4)
	copy(k, prefixOffset)
	binary.BigEndian.PutUint32(k[len(prefixOffset):], uint32(p))
	return k
}

func docKey(org, id string) []byte         { return []byte("d/" + org + "/" + id) }
func batchKey(org, name string) []byte     { return []byte("b/" + org + "/" + name) }
func batchPrefix(org string) []byte        { return []byte("b/" + org + "/") }
func memberPrefix(org, name string) []byte { return []byte("bd/" + org + "/" + name + "/") }
func orgKey(org string) []byte             { return []byte("org/" + org) }
func apiKeyKey(hash string) []byte         { return []byte("k/" + hash) }
func apiKeyIDKey(id string) []byte         { return []byte("kid/" + id) }
func idemKey(org, key string) []byte       { return []byte("i/" + org + "/" + key) }
func orgAPIKeyKey(org, id string) []byte   { return []byte("ko/" + org + "/" + id) }

// memberKey is bd/<org>/<batch>/<seq as 16 hex digits>/<doc>; seq is the
// upload's offset, never negative. Built by hand: it is made for every
// upload, and fmt was a tenth of the batch fold.
func memberKey(org, name string, seq int64, doc string) []byte {
	k := make([]byte, 0, len("bd///")+len(org)+len(name)+16+1+len(doc))
	k = append(append(append(append(append(k, "bd/"...), org...), '/'), name...), '/')
	const hex = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		k = append(k, hex[uint64(seq)>>shift&0xf])
	}
	return append(append(k, '/'), doc...)
}

// prefixEnd returns the smallest key greater than every key with prefix.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
