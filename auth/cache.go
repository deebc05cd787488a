package auth

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"
)

// tokenCache remembers verified tokens by the SHA-256 of their text, never the token. An entry
// is usable before its deadline (exp + skew), which every hit checks; the oldest goes first.
type tokenCache struct {
	max int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element
	order   *list.List    // front = oldest insertion
	gen     atomic.Uint64 // counts clears: a verification begun before one must not store its result
}

type cacheEntry struct {
	key      [sha256.Size]byte
	p        Principal
	deadline time.Time
}

func newTokenCache(max int) *tokenCache {
	if max <= 0 {
		return nil
	}
	return &tokenCache{max: max, entries: make(map[[sha256.Size]byte]*list.Element), order: list.New()}
}

// get returns the cached principal and whether it is still live at now (an expired entry is
// dropped).
func (c *tokenCache) get(key [sha256.Size]byte, now time.Time) (p Principal, live, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return Principal{}, false, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.deadline) {
		c.removeLocked(el)
		return e.p, false, true
	}
	return e.p, true, true
}

// generation is the number of clears so far; put takes the one read before the verification.
func (c *tokenCache) generation() uint64 { return c.gen.Load() }

// put stores a verified token, unless the cache was cleared since gen was read: the key that
// verified it may be the one withdrawn.
func (c *tokenCache) put(key [sha256.Size]byte, p Principal, deadline time.Time, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen.Load() {
		return
	}
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		e.p, e.deadline = p, deadline
		return
	}
	for c.order.Len() >= c.max {
		c.evictLocked(now)
	}
	c.entries[key] = c.order.PushBack(&cacheEntry{key: key, p: p, deadline: deadline})
}

// evictLocked makes room: it drops expired entries among the oldest few,
// or else the oldest entry. Scanning only a few keeps inserts O(1).
func (c *tokenCache) evictLocked(now time.Time) {
	const scan = 8
	removed := false
	el := c.order.Front()
	for i := 0; i < scan && el != nil; i++ {
		next := el.Next()
		if !now.Before(el.Value.(*cacheEntry).deadline) {
			c.removeLocked(el)
			removed = true
		}
		el = next
	}
	if !removed {
		c.removeLocked(c.order.Front())
	}
}

func (c *tokenCache) removeLocked(el *list.Element) {
	c.order.Remove(el)
	delete(c.entries, el.Value.(*cacheEntry).key)
}

// clear forgets every verified token: a key was withdrawn or replaced, and tokens it signed
// must be checked again.
func (c *tokenCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = make(map[[sha256.Size]byte]*list.Element)
	c.order.Init()
	c.gen.Add(1)
}
