package eventstore

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"
)

// Identifiers are 48 bits of milliseconds followed by 80 random bits in
// lowercase base32: they sort by creation time, which keeps Pebble keys and
// logs in a useful order, and never collide in practice.
var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns prefix followed by a fresh 26-character id.
func NewID(prefix string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("eventstore: no randomness: " + err.Error())
	}
	return prefix + idEncoding.EncodeToString(b[:])
}

// Secret returns n random bytes encoded like New, for API keys and
// signing secrets.
func Secret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("eventstore: no randomness: " + err.Error())
	}
	return idEncoding.EncodeToString(b)
}
