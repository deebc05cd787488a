package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"
)

func cacheKey(i int) [sha256.Size]byte { return sha256.Sum256(fmt.Appendf(nil, "token-%d", i)) }

// TestTokenCacheDisabled: a size of zero or less means no cache at all (every token is
// verified), not a cache that can hold nothing.
func TestTokenCacheDisabled(t *testing.T) {
	for _, max := range []int{0, -1} {
		if c := newTokenCache(max); c != nil {
			t.Errorf("newTokenCache(%d) = %v, want nil", max, c)
		}
	}
	if c := newTokenCache(1); c == nil {
		t.Error("newTokenCache(1) = nil, want a cache")
	}
}

// TestTokenCacheEvictsExpiredFirst: when the cache is full, an expired entry among the
// oldest goes before the oldest live one.
func TestTokenCacheEvictsExpiredFirst(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	live, expired := now.Add(time.Hour), now
	c := newTokenCache(3)
	c.put(cacheKey(0), Principal{Subject: "0"}, live, now, 0)
	c.put(cacheKey(1), Principal{Subject: "1"}, expired, now, 0)
	c.put(cacheKey(2), Principal{Subject: "2"}, live, now, 0)
	c.put(cacheKey(3), Principal{Subject: "3"}, live, now, 0)

	if n := c.order.Len(); n != 3 {
		t.Fatalf("len = %d, want 3", n)
	}
	for _, i := range []int{0, 2, 3} {
		if p, live, found := c.get(cacheKey(i), now); !found || !live || p.Subject != fmt.Sprint(i) {
			t.Errorf("entry %d: %+v live=%v found=%v; want it kept", i, p, live, found)
		}
	}
	if _, _, found := c.get(cacheKey(1), now); found {
		t.Error("the expired entry is still cached")
	}
}

// TestTokenCacheScansOnlyTheOldestEight: eviction looks at the eight oldest entries and no
// further, so an insert stays O(1); an expired ninth is left for later and the oldest goes.
func TestTokenCacheScansOnlyTheOldestEight(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := newTokenCache(10)
	for i := range 10 {
		deadline := now.Add(time.Hour)
		if i == 8 {
			deadline = now // the ninth oldest
		}
		c.put(cacheKey(i), Principal{Subject: fmt.Sprint(i)}, deadline, now, 0)
	}
	c.put(cacheKey(10), Principal{Subject: "10"}, now.Add(time.Hour), now, 0)

	if n := c.order.Len(); n != 10 {
		t.Fatalf("len = %d, want 10", n)
	}
	if _, _, found := c.get(cacheKey(0), now); found {
		t.Error("the oldest entry was kept; the scan went past the eighth")
	}
	if _, live, found := c.get(cacheKey(8), now); !found || live {
		t.Errorf("the expired ninth: found=%v live=%v; want found and not live", found, live)
	}
}

// TestTokenCacheFullOfExpired: several expired entries among the oldest all go at once.
func TestTokenCacheFullOfExpired(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := newTokenCache(4)
	for i := range 4 {
		c.put(cacheKey(i), Principal{}, now.Add(-time.Duration(i+1)*time.Second), now, 0)
	}
	c.put(cacheKey(4), Principal{}, now.Add(time.Hour), now, 0)
	if n := c.order.Len(); n != 1 {
		t.Errorf("len = %d, want 1: every expired entry among the oldest goes", n)
	}
}

// A cache hit allocates what the caller's copy of the principal needs, and nothing for the
// token: the key is hashed without copying the token to the heap.
func TestCacheHitCopiesNoToken(t *testing.T) {
	v, tok := verifierWithToken(t)
	ctx := context.Background()
	p, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	hit := testing.AllocsPerRun(100, func() { _, _ = v.Verify(ctx, tok) })
	clone := testing.AllocsPerRun(100, func() { _ = p.clone() })
	if hit > clone {
		t.Errorf("a cache hit makes %.0f allocations; the principal's copy needs %.0f", hit, clone)
	}
}

// TestTokenCacheDropsAPutFromBeforeAClear: a verification that began before the cache was
// cleared (a key withdrawn or replaced meanwhile) may have used the old key; its result is
// not stored.
func TestTokenCacheDropsAPutFromBeforeAClear(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := newTokenCache(4)
	gen := c.generation()
	c.clear()
	c.put(cacheKey(0), Principal{Subject: "0"}, now.Add(time.Hour), now, gen)
	if _, _, found := c.get(cacheKey(0), now); found {
		t.Error("a verification begun before the clear was stored")
	}
	c.put(cacheKey(1), Principal{Subject: "1"}, now.Add(time.Hour), now, c.generation())
	if _, live, found := c.get(cacheKey(1), now); !found || !live {
		t.Error("a verification begun after the clear was not stored")
	}
}
