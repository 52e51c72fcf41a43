package projections

import (
	"sync"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// keyCache keeps API keys found by hash in memory: every request
// authenticates, and a Pebble read plus a JSON decode per request was the
// largest cost of a GET (bench profile). Only keys that exist are cached
// (garbage tokens cannot grow it beyond the keys there are). Any applied
// key event clears it; a generation counter keeps a read that raced with
// that apply from storing the stale key afterwards.
type keyCache struct {
	mu   sync.RWMutex
	gen  uint64
	keys map[string]domain.ApiKey
}

func (c *keyCache) get(hash string) (domain.ApiKey, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keys[hash]
	return k, c.gen, ok
}

// put stores k unless a key event was applied since gen was read.
func (c *keyCache) put(hash string, k domain.ApiKey, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.keys == nil {
		c.keys = map[string]domain.ApiKey{}
	}
	c.keys[hash] = k
}

// applied clears the cache after a committed fetch that changed keys.
func (c *keyCache) applied(recs []eventstore.Record) {
	for _, r := range recs {
		switch r.Event.(type) {
		case *domain.ApiKeyIssued, *domain.ApiKeyRevoked:
			c.mu.Lock()
			c.gen++
			c.keys = nil
			c.mu.Unlock()
			return
		}
	}
}
