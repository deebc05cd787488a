package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestVerifyGoodTokens(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1, kr.rsa2, kr.ps, kr.ec256, kr.ed)
	v := newTestVerifier(t, iss, func(c *Config) { c.UserClaim = "preferred_username" })
	now := time.Now().Truncate(time.Second) // as the claims say it
	exp := now.Add(time.Hour)

	tests := []struct {
		name   string
		key    signingKey
		over   map[string]any
		scopes []string
	}{
		{"string aud, scope string", kr.rsa1, nil, []string{"mcp:use", "mcp:write"}},
		{"array aud", kr.rsa1, map[string]any{"aud": []string{"account", testResource}}, []string{"mcp:use", "mcp:write"}},
		{"extra audience", kr.rsa1, map[string]any{"aud": "gemgate-extra"}, []string{"mcp:use", "mcp:write"}},
		{"scp array", kr.rsa2, map[string]any{"scope": nil, "scp": []string{"mcp:use", "files:read"}}, []string{"mcp:use", "files:read"}},
		{"scp string", kr.rsa1, map[string]any{"scope": nil, "scp": "mcp:use  files:read"}, []string{"mcp:use", "files:read"}},
		{"scope and scp union", kr.rsa1, map[string]any{"scope": "a b", "scp": []string{"b", "c"}}, []string{"a", "b", "c"}},
		{"no scopes", kr.rsa1, map[string]any{"scope": nil}, nil},
		{"PS256", kr.ps, nil, []string{"mcp:use", "mcp:write"}},
		{"ES256", kr.ec256, nil, []string{"mcp:use", "mcp:write"}},
		{"EdDSA", kr.ed, nil, []string{"mcp:use", "mcp:write"}},
		{"expired within skew", kr.rsa1, map[string]any{"exp": now.Add(-10 * time.Second).Unix()}, []string{"mcp:use", "mcp:write"}},
		{"nbf and iat within skew", kr.rsa1, map[string]any{"nbf": now.Add(20 * time.Second).Unix(), "iat": now.Add(20 * time.Second).Unix()}, []string{"mcp:use", "mcp:write"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := iss.claims(now, tt.over)
			p, err := v.Verify(context.Background(), token(t, tt.key, claims, nil))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			wantExp := exp
			if e, ok := tt.over["exp"].(int64); ok {
				wantExp = time.Unix(e, 0)
			}
			want := Principal{Issuer: iss.URL(), Subject: "user-123", User: "alice", Scopes: tt.scopes, Expiry: wantExp}
			if got, want := AcceptedUntil(p), wantExp.Add(DefaultClockSkew); !got.Equal(want) {
				t.Errorf("AcceptedUntil = %v, want %v (exp and the verifier's skew, %v)", got, want, DefaultClockSkew)
			}
			if diff := cmp.Diff(want, p, cmpopts.IgnoreUnexported(Principal{}), cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]any{"admin", "dev"}, p.Claims()["roles"]); diff != "" {
				t.Errorf("roles claim (-want +got):\n%s", diff)
			}
			if sub := p.Claims()["sub"]; sub != "user-123" {
				t.Errorf("sub claim = %v", sub)
			}
		})
	}
}

func TestVerifyNoKidSingleKey(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	v := newTestVerifier(t, iss, nil)
	if _, err := v.Verify(context.Background(), token(t, kr.rsa1, iss.claims(time.Now(), nil), map[string]any{"kid": nil})); err != nil {
		t.Fatalf("a token without kid against a one-key set: %v", err)
	}
}

func TestVerifyErrorsAreTyped(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	v := newTestVerifier(t, iss, nil)
	now := time.Now()
	tests := []struct{ tok, reason string }{
		{token(t, kr.rsa1, iss.claims(now, map[string]any{"exp": now.Add(-time.Hour).Unix()}), nil), ReasonExpired},
		{token(t, kr.rsa1, iss.claims(now, map[string]any{"aud": "x"}), nil), ReasonAudience},
		{token(t, kr.rsa1, iss.claims(now, map[string]any{"iss": "x"}), nil), ReasonIssuer},
		{token(t, kr.rsa3, iss.claims(now, nil), nil), ReasonUnknownKey},
		{"x", ReasonMalformed},
	}
	for _, tt := range tests {
		_, err := v.Verify(context.Background(), tt.tok)
		if !errors.Is(err, ErrInvalidToken) {
			t.Errorf("error %v does not wrap ErrInvalidToken", err)
		}
		if got := FailureReason(err); got != tt.reason {
			t.Errorf("error %v: reason %q, want %q", err, got, tt.reason)
		}
	}
	if got := FailureReason(nil); got != "" {
		t.Errorf("FailureReason(nil) = %q", got)
	}
	if got := FailureReason(errors.New("boom")); got != ReasonInternal {
		t.Errorf("FailureReason(other) = %q", got)
	}
}

// verifyNoting verifies tok and reports whether v took it from its cache of verified tokens.
func verifyNoting(v *Verifier, tok string) (Principal, bool, error) {
	var hit bool
	p, err := v.Verify(WithCacheNote(context.Background(), &hit), tok)
	return p, hit, err
}

func TestVerifyCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t)
		v := newTestVerifier(t, iss, nil)
		now := time.Now()
		tok := token(t, kr.rsa1, iss.claims(now, map[string]any{"exp": now.Add(2 * time.Minute).Unix()}), nil)

		first, hit, err := verifyNoting(v, tok)
		if err != nil || hit {
			t.Fatalf("first Verify: hit=%v err=%v; want a full check", hit, err)
		}
		first.Scopes[0] = "changed by caller" // must not reach the cache
		second, hit, err := verifyNoting(v, tok)
		if err != nil || !hit {
			t.Fatalf("second Verify: hit=%v err=%v; want a cache hit", hit, err)
		}
		third, _, _ := verifyNoting(v, tok)
		if diff := cmp.Diff(second, third, cmp.AllowUnexported(Principal{})); diff != "" {
			t.Errorf("cache hits differ (-want +got):\n%s", diff)
		}
		if second.Scopes[0] != "mcp:use" {
			t.Errorf("cached principal was changed through a returned copy: %v", second.Scopes)
		}

		time.Sleep(2*time.Minute + DefaultClockSkew - time.Second)
		if _, hit, err := verifyNoting(v, tok); err != nil || !hit {
			t.Fatalf("within skew after exp: hit=%v err=%v; want a cache hit", hit, err)
		}
		time.Sleep(time.Second)
		// The cache decides the expiry: its refusal carries none of the token's facts (kid), which
		// only the full check reads.
		_, _, err = verifyNoting(v, tok)
		if FailureReason(err) != ReasonExpired {
			t.Fatalf("after exp+skew: err = %v, want expired", err)
		}
		if kid := logAttr(RefusalLogAttrs(err), "kid"); kid != "" {
			t.Errorf("after exp+skew: the refusal logs kid %q; want the cache's verdict, without the token's facts", kid)
		}
		// Dropped from the cache, the full check refuses it too.
		_, _, err = verifyNoting(v, tok)
		if FailureReason(err) != ReasonExpired {
			t.Fatalf("second try after expiry: %v", err)
		}
		if kid := logAttr(RefusalLogAttrs(err), "kid"); kid != "k1" {
			t.Errorf("second try after expiry: the refusal logs kid %q; want k1 from the full check", kid)
		}
	})
}

// logAttr is the value of the attribute key in attrs, "" when there is none.
func logAttr(attrs []slog.Attr, key string) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// attrTime is the time of the attribute key, zero if there is none.
func attrTime(attrs []slog.Attr, key string) time.Time {
	for _, a := range attrs {
		if a.Key == key && a.Value.Kind() == slog.KindTime {
			return a.Value.Time()
		}
	}
	return time.Time{}
}

func TestVerifyCacheDisabledAndBounded(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	toks := make([]string, 3)
	for i := range toks {
		toks[i] = token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"jti": fmt.Sprint(i)}), nil)
	}

	off := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
	for range 3 {
		if _, hit, err := verifyNoting(off, toks[0]); err != nil || hit {
			t.Fatalf("cache disabled: hit=%v err=%v; want a full check every time", hit, err)
		}
	}

	small := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = 2 })
	for _, tok := range toks {
		if _, _, err := verifyNoting(small, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := small.cache.order.Len(); n != 2 {
		t.Errorf("cache holds %d entries, want 2", n)
	}
	if _, hit, _ := verifyNoting(small, toks[2]); !hit {
		t.Error("the newest token was not kept")
	}
	if _, hit, _ := verifyNoting(small, toks[0]); hit {
		t.Error("the oldest token was kept; want it evicted")
	}
}

func TestKeyRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		var refreshes []error
		var mu sync.Mutex
		v := newTestVerifier(t, iss, func(c *Config) {
			c.OnKeyRefresh = func(err error) { mu.Lock(); refreshes = append(refreshes, err); mu.Unlock() }
		})
		ctx := context.Background()
		if got := iss.fetches.Load(); got != 1 {
			t.Fatalf("fetches after start = %d, want 1", got)
		}

		// The issuer rotates to k2; within the interval the new kid is unknown
		// and no fetch happens.
		iss.publish(t, kr.rsa1, kr.rsa2)
		tok2 := token(t, kr.rsa2, iss.claims(time.Now(), nil), nil)
		if _, err := v.Verify(ctx, tok2); FailureReason(err) != ReasonUnknownKey {
			t.Fatalf("within interval: err = %v, want an unknown key", err)
		}
		if got := iss.fetches.Load(); got != 1 {
			t.Fatalf("fetches within interval = %d, want 1", got)
		}

		time.Sleep(DefaultKeyRefreshInterval)
		if _, err := v.Verify(ctx, tok2); err != nil {
			t.Fatalf("after interval: %v", err)
		}
		if got := iss.fetches.Load(); got != 2 {
			t.Fatalf("fetches = %d, want 2", got)
		}

		burst := func(kid signingKey, wantOK bool) {
			t.Helper()
			var wg sync.WaitGroup
			errs := make([]error, 50)
			for i := range errs {
				tok := token(t, kid, iss.claims(time.Now(), map[string]any{"jti": fmt.Sprint(i)}), nil)
				wg.Go(func() { _, errs[i] = v.Verify(ctx, tok) })
			}
			wg.Wait()
			for i, err := range errs {
				if (err == nil) != wantOK {
					t.Fatalf("token %d: err = %v, want ok=%v", i, err, wantOK)
				}
			}
		}

		// 50 concurrent tokens naming a new kid: one fetch serves them all.
		iss.publish(t, kr.rsa2, kr.rsa3)
		time.Sleep(DefaultKeyRefreshInterval)
		burst(kr.rsa3, true)
		if got := iss.fetches.Load(); got != 3 {
			t.Fatalf("fetches after burst = %d, want 3", got)
		}
		// k1 was withdrawn; 50 concurrent tokens with a kid nobody has: one fetch per interval.
		time.Sleep(DefaultKeyRefreshInterval)
		burst(kr.rsa1, false)
		if got := iss.fetches.Load(); got != 4 {
			t.Fatalf("fetches after unknown-kid burst = %d, want 4", got)
		}
		burst(kr.rsa1, false)
		if got := iss.fetches.Load(); got != 4 {
			t.Fatalf("fetches after second burst in the same interval = %d, want 4", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(refreshes) != 4 {
			t.Errorf("OnKeyRefresh called %d times, want 4", len(refreshes))
		}
	})
}

func TestStaleKeysAreRefreshed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
		ctx := context.Background()
		iss.publish(t, kr.rsa2) // the issuer withdraws k1
		time.Sleep(keyMaxAge + time.Second)
		_, err := v.Verify(ctx, token(t, kr.rsa1, iss.claims(time.Now(), nil), nil))
		if !errors.Is(err, ErrInvalidToken) || FailureReason(err) != ReasonUnknownKey {
			t.Fatalf("withdrawn key after max age: err = %v", err)
		}
		if got := iss.fetches.Load(); got != 2 {
			t.Errorf("fetches = %d, want 2", got)
		}
	})
}

func TestNewVerifier(t *testing.T) {
	ctx := context.Background()
	t.Run("discovery", func(t *testing.T) {
		iss := newTestIssuer(t)
		v, err := NewVerifier(ctx, Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()})
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Ready(ctx); err != nil {
			t.Errorf("Ready: %v", err)
		}
		if iss.discoveries.Load() != 1 || iss.fetches.Load() != 1 {
			t.Errorf("discoveries %d fetches %d, want 1 1", iss.discoveries.Load(), iss.fetches.Load())
		}
	})
	t.Run("JWKSURL skips discovery", func(t *testing.T) {
		iss := newTestIssuer(t)
		_, err := NewVerifier(ctx, Config{Issuer: "https://issuer.example", JWKSURL: iss.URL() + "/jwks", Audiences: []string{testResource}, HTTPClient: iss.client()})
		if err != nil {
			t.Fatal(err)
		}
		if iss.discoveries.Load() != 0 {
			t.Errorf("discovery happened")
		}
	})
	t.Run("issuer unreachable", func(t *testing.T) {
		iss := newTestIssuer(t)
		iss.down.Store(true)
		if _, err := NewVerifier(ctx, Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("issuer mismatch", func(t *testing.T) {
		iss := newTestIssuer(t)
		if _, err := NewVerifier(ctx, Config{Issuer: iss.URL() + "/", Audiences: []string{testResource}, HTTPClient: iss.client()}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("jwks unusable", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"}]}`))
		}))
		t.Cleanup(srv.Close)
		_, err := NewVerifier(ctx, Config{Issuer: "https://issuer.example", JWKSURL: srv.URL, Audiences: []string{testResource}})
		if err == nil {
			t.Fatal("a JWKS with only a symmetric key was accepted")
		}
	})
	t.Run("invalid config lists every problem", func(t *testing.T) {
		_, err := NewVerifier(ctx, Config{KeyRefreshInterval: -1})
		if err == nil {
			t.Fatal("no error")
		}
		for _, want := range []string{"issuer is required", "audience is required", "key refresh interval"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
}

// tokenKey is SHA-256 of the token, whatever its length, and whatever the pooled buffer
// held before.
func TestTokenKeyIsSHA256(t *testing.T) {
	for _, n := range []int{0, 1, 700, 2048, 2049, maxTokenBytes} {
		raw := strings.Repeat("e", n)
		if tokenKey(raw) != sha256.Sum256([]byte(raw)) {
			t.Errorf("tokenKey of %d bytes is not their SHA-256", n)
		}
	}
}

// A gateway started while its issuer is down answers 503 with Retry-After to requests
// with a token (never 401: the token may be perfectly good), and verifies tokens once the
// issuer answers, without a restart.
func TestStartVerifierWhileIssuerIsDown(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	iss.discoveryOK.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := StartVerifier(ctx, Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client(), UserClaim: "preferred_username"})
	if err != nil {
		t.Fatalf("StartVerifier with the issuer down: %v", err)
	}
	tok := token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)

	_, err = v.Verify(context.Background(), tok)
	if !errors.Is(err, ErrKeysUnavailable) || FailureReason(err) != ReasonUnavailable || errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify before keys: err = %v, want ErrKeysUnavailable, not ErrInvalidToken", err)
	}
	if err := v.Ready(context.Background()); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("Ready before keys = %v", err)
	}

	h := newMiddlewareHarness(v)
	rec := h.serve(bearerRequest(tok))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("with a token before keys: status %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("503 carries a challenge: %q", rec.Header().Get("WWW-Authenticate"))
	}
	if rec := h.serve(httptest.NewRequest("POST", "/mcp", nil)); rec.Code != http.StatusUnauthorized {
		t.Errorf("without a token before keys: status %d, want 401", rec.Code)
	}
	if rec := h.serve(bearerRequest("not-a-jwt")); rec.Code != http.StatusUnauthorized {
		t.Errorf("a malformed token before keys: status %d, want 401", rec.Code)
	}

	iss.discoveryOK.Store(true)
	deadline := time.Now().Add(30 * time.Second)
	for v.Ready(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("keys not loaded 30s after the issuer came up: %v", v.Ready(context.Background()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rec := h.serve(bearerRequest(tok)); rec.Code != http.StatusNoContent {
		t.Fatalf("after the issuer came up: status %d: %s", rec.Code, rec.Body)
	}
}

// The background loader stops with its context.
func TestStartVerifierStopsRetryingWithItsContext(t *testing.T) {
	iss := newTestIssuer(t)
	iss.discoveryOK.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	v, err := StartVerifier(ctx, Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for iss.discoveries.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	ks := v.keys
	for ks.fetching.Load() && time.Now().Before(deadline) { // an attempt already on the wire
		time.Sleep(10 * time.Millisecond)
	}
	n := iss.discoveries.Load()
	// Proving that nothing happens takes some waiting: a live loader, nudged, would retry
	// within loadNudgeGap.
	for range 3 {
		_ = v.Ready(context.Background())
		time.Sleep(loadNudgeGap / 2)
	}
	if got := iss.discoveries.Load(); got != n {
		t.Errorf("discoveries went from %d to %d after the context ended", n, got)
	}
}

func TestStartVerifierRefusesBadConfig(t *testing.T) {
	if _, err := StartVerifier(context.Background(), Config{}); err == nil {
		t.Fatal("no error for an empty config")
	}
}

// sizedToken signs a good token padded to exactly n bytes, varying a pad claim and a pad
// header (base64url cannot make every length from the payload alone).
func sizedToken(t *testing.T, iss *testIssuer, n int) string {
	t.Helper()
	k := keyring().ec256 // quick to sign, and its signatures are all one length
	base := len(token(t, k, iss.claims(time.Now(), map[string]any{"pad": ""}), map[string]any{"x": ""}))
	for h := range 4 {
		for p := max(0, (n-base)*3/4-8); p < (n-base)*3/4+8; p++ {
			tok := token(t, k, iss.claims(time.Now(), map[string]any{"pad": strings.Repeat("p", p)}), map[string]any{"x": strings.Repeat("h", h)})
			if len(tok) == n {
				return tok
			}
		}
	}
	t.Fatalf("no token of exactly %d bytes", n)
	return ""
}

// TestTokenSizeLimit: a token of exactly 16 KiB is verified; one byte more is refused as
// too large before any parsing.
func TestTokenSizeLimit(t *testing.T) {
	iss := newTestIssuer(t, keyring().ec256)
	v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
	if _, err := v.Verify(t.Context(), sizedToken(t, iss, maxTokenBytes)); err != nil {
		t.Errorf("a token of exactly %d bytes: %v", maxTokenBytes, err)
	}
	_, err := v.Verify(t.Context(), sizedToken(t, iss, maxTokenBytes+1))
	if FailureReason(err) != ReasonMalformed || logAttr(RefusalLogAttrs(err), "problem") != "larger than 16 KiB" {
		t.Errorf("a token of %d bytes: %v, want refused as larger than 16 KiB", maxTokenBytes+1, err)
	}
}

// TestClockSkewBoundary: nbf, iat and exp are judged against gemgate's clock with a skew of
// 30 s (README, DESIGN §4), to the nanosecond: a token whose nbf or iat is exactly 30 s
// ahead is accepted, 30 s and 1 ns ahead refused as not yet valid; one whose exp is 30 s
// less 1 ns behind is accepted, exactly 30 s behind refused as expired. The skew is written
// out, not DefaultClockSkew, so that a changed constant is noticed too. In a
// testing/synctest bubble, whose clock moves only when told.
func TestClockSkewBoundary(t *testing.T) {
	const skew = 30 * time.Second
	kr := keyring()
	for _, claim := range []string{claimNotBefore, claimIssuedAt} {
		t.Run(claim, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				iss := newTestIssuer(t, kr.rsa1)
				v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
				start := time.Now()
				// A whole second, as the claim says it; iat is start unless it is the claim.
				at := time.Unix(start.Unix(), 0).Add(skew + 2*time.Second)
				tok := token(t, kr.rsa1, iss.claims(start, map[string]any{claim: at.Unix()}), nil)

				time.Sleep(time.Until(at.Add(-skew - time.Nanosecond)))
				_, err := v.Verify(context.Background(), tok)
				if got := FailureReason(err); got != ReasonNotYetValid {
					t.Fatalf("%s %v ahead of the clock: err = %v, reason %q, want %q", claim, time.Until(at), err, got, ReasonNotYetValid)
				}
				attrs := RefusalLogAttrs(err)
				if !attrTime(attrs, claim).Equal(at) || !attrTime(attrs, "now").Equal(time.Now()) || logAttr(attrs, "allowed_skew") != skew.String() {
					t.Errorf("refusal %v, want claim %s at %v, now %v, skew %v", attrs, claim, at, time.Now(), skew)
				}

				time.Sleep(time.Nanosecond)
				if _, err := v.Verify(context.Background(), tok); err != nil {
					t.Errorf("%s %v ahead of the clock: %v, want accepted", claim, time.Until(at), err)
				}
			})
		})
	}
	t.Run(claimExpiry, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			iss := newTestIssuer(t, kr.rsa1)
			v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
			start := time.Now()
			exp := time.Unix(start.Unix(), 0).Add(2 * time.Second)
			tok := token(t, kr.rsa1, iss.claims(start, map[string]any{"exp": exp.Unix()}), nil)

			time.Sleep(time.Until(exp.Add(skew - time.Nanosecond)))
			if _, err := v.Verify(context.Background(), tok); err != nil {
				t.Errorf("exp %v behind the clock: %v, want accepted", time.Since(exp), err)
			}

			time.Sleep(time.Nanosecond)
			_, err := v.Verify(context.Background(), tok)
			if got := FailureReason(err); got != ReasonExpired {
				t.Fatalf("exp %v behind the clock: err = %v, reason %q, want %q", time.Since(exp), err, got, ReasonExpired)
			}
			if attrs := RefusalLogAttrs(err); !attrTime(attrs, "exp").Equal(exp) || logAttr(attrs, "allowed_skew") != skew.String() {
				t.Errorf("refusal %v, want expiry %v, skew %v", attrs, exp, skew)
			}
		})
	})
}

// TestUnknownKidRefetchInterval: a token naming a kid the loaded keys lack makes gemgate
// fetch the issuer's keys again only once KeyRefreshInterval (default a minute, as the
// README says) has passed since the last fetch: 1 ns before it, the token is refused as of
// an unknown key and nothing is fetched; at it, the keys are fetched and the token verifies.
// Pinned twice in a row, so that the interval counts from the last fetch, not from the start.
func TestUnknownKidRefetchInterval(t *testing.T) {
	kr := keyring()
	for _, tt := range []struct {
		name       string
		configured time.Duration
		interval   time.Duration
	}{
		{"default", 0, time.Minute},
		{"configured", 10 * time.Second, 10 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				iss := newTestIssuer(t, kr.rsa1)
				v := newTestVerifier(t, iss, func(c *Config) {
					c.CacheSize = -1
					c.KeyRefreshInterval = tt.configured
				})
				if got := iss.fetches.Load(); got != 1 {
					t.Fatalf("fetches after start = %d, want 1", got)
				}
				// Each round the issuer publishes one more key, and a token names it.
				published := []signingKey{kr.rsa1}
				for n, k := range []signingKey{kr.rsa2, kr.rsa3} {
					last := time.Now() // the last fetch
					published = append(published, k)
					iss.publish(t, published...)
					tok := token(t, k, iss.claims(time.Now(), nil), nil)

					time.Sleep(tt.interval - time.Nanosecond)
					if _, err := v.Verify(context.Background(), tok); FailureReason(err) != ReasonUnknownKey {
						t.Fatalf("kid %s, %v after the last fetch: err = %v, want an unknown key", k.kid, time.Since(last), err)
					}
					if got, want := iss.fetches.Load(), int32(n+1); got != want {
						t.Fatalf("kid %s, %v after the last fetch: fetches = %d, want %d", k.kid, time.Since(last), got, want)
					}

					time.Sleep(time.Nanosecond)
					if _, err := v.Verify(context.Background(), tok); err != nil {
						t.Fatalf("kid %s, %v after the last fetch: %v, want a fetch and the token verified", k.kid, time.Since(last), err)
					}
					if got, want := iss.fetches.Load(), int32(n+2); got != want {
						t.Fatalf("kid %s, %v after the last fetch: fetches = %d, want %d", k.kid, time.Since(last), got, want)
					}
				}
			})
		})
	}
}
