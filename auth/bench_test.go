package auth

import (
	"context"
	"testing"
	"time"
)

func benchmarkVerify(b *testing.B, cacheSize int) {
	kr := keyring()
	iss := newTestIssuer(b, kr.rsa1)
	v := newTestVerifier(b, iss, func(c *Config) { c.CacheSize = cacheSize })
	tok := token(b, kr.rsa1, iss.claims(time.Now(), nil), nil)
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyCold checks the RS256 signature and claims every time.
func BenchmarkVerifyCold(b *testing.B) { benchmarkVerify(b, -1) }

// BenchmarkVerifyCached is the hot path: hash, cache lookup, expiry check.
func BenchmarkVerifyCached(b *testing.B) { benchmarkVerify(b, DefaultCacheSize) }
