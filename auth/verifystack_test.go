//go:build !race

// The race detector's instrumentation makes every frame larger, so what this file pins holds
// only in a build without it; .ci/test runs it in such a build (step "idle stream stack").

package auth

import (
	"context"
	"testing"
	"time"

	"github.com/gemgate/gemgate/internal/stacktest"
)

var frameSink byte

// underFrames calls f under 2.5 KiB of frames, about what net/http and the gateway's
// middleware hold under a request's authentication.
//
//go:noinline
func underFrames(f func()) {
	var a [2560]byte
	a[len(a)-1] = frameSink
	f()
	frameSink = a[len(a)-1]
}

// TestVerifyMissLeavesNoDoubledStack: a token's full check (a cache miss) does not grow the
// caller's goroutine past 8 KiB, however deep the check runs: the request that makes it may go
// on to hold an idle GET stream, which would keep a doubled stack until a collection halved
// it. Measured with collection off, over goroutines that verify under a request's depth of
// frames and then wait.
func TestVerifyMissLeavesNoDoubledStack(t *testing.T) {
	const callers = 64
	iss := newTestIssuer(t)
	v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 }) // every check a miss
	tok := token(t, keyring().rsa1, iss.claims(time.Now(), nil), nil)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	verified := make(chan error)
	per, startSize := stacktest.PerCall(callers, func() {
		go func() {
			underFrames(func() {
				_, err := v.Verify(context.Background(), tok)
				verified <- err
				<-release
			})
		}()
		if err := <-verified; err != nil {
			t.Fatal(err)
		}
	})
	// 8 KiB (or the starting size, if the runtime starts goroutines with more), and 1 KiB of
	// slack (see stacktest.PerCall).
	limit := float64(max(8<<10, startSize) + 1<<10)
	t.Logf("stack per waiting caller after a full check: %.0f B (starting size %d B)", per, startSize)
	if per > limit {
		t.Errorf("a caller that verified a token holds %.0f B of stack; want at most %.0f: the check grew it", per, limit)
	}
}
