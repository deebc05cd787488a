package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
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

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// A JWKS fetch waiting on a slow issuer must not hold up other requests beyond their own
// context, and however many requests name unknown kids at once, one fetch serves them.
func TestJWKSFetchDoesNotHoldRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
		if got := iss.fetches.Load(); got != 1 {
			t.Fatalf("fetches at start = %d, want 1", got)
		}
		iss.publish(t, kr.rsa1, kr.rsa2)
		iss.holdFetches.Store(true)
		time.Sleep(DefaultKeyRefreshInterval)

		// Many requests with a new kid start (and wait on) one fetch.
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			tok := token(t, kr.rsa2, iss.claims(time.Now(), map[string]any{"jti": fmt.Sprint(i)}), nil)
			wg.Go(func() { _, errs[i] = v.Verify(context.Background(), tok) })
		}
		select {
		case <-iss.held:
		case <-time.After(10 * time.Second):
			t.Fatal("no JWKS fetch started")
		}

		// While it is in flight, a request with a short context gives up on time.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		tok := token(t, kr.rsa2, iss.claims(time.Now(), map[string]any{"jti": "short"}), nil)
		start := time.Now()
		go func() { _, err := v.Verify(ctx, tok); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("short request: err = %v, want its context's deadline error", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("short request returned after %v", d)
			}
		case <-time.After(3 * time.Second):
			t.Error("a request with a 100ms context still waits on the JWKS fetch after 3s")
		}

		iss.unblock()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
		}
		if got := iss.fetches.Load(); got != 2 {
			t.Errorf("fetches = %d, want 2 (one at start, one for the new kid)", got)
		}
	})
}

// TestUsableKeyRSASize: an RSA key below 2048 bits is never used: a key set of only such a
// key is refused, and next to a good key it verifies nothing.
func TestUsableKeyRSASize(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	small := signingKey{kid: "small", alg: jwa.RS256, priv: priv}
	iss := newTestIssuer(t, small)
	cfg := Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()}
	if _, err := NewVerifier(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "no usable signing key") {
		t.Fatalf("a key set of a 1024-bit RSA key: %v, want refused as holding no usable key", err)
	}
	iss.publish(t, keyring().rsa1, small)
	v, err := NewVerifier(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), token(t, small, iss.claims(time.Now(), nil), nil)); FailureReason(err) != ReasonUnknownKey {
		t.Errorf("a token of the 1024-bit key: %v, want refused as signed by an unknown key", err)
	}
	if _, err := v.Verify(t.Context(), token(t, keyring().rsa1, iss.claims(time.Now(), nil), nil)); err != nil {
		t.Errorf("a token of the 2048-bit key: %v", err)
	}
}

// jwksOf is a JWKS document holding keys as "keys" names them.
func jwksOf(t *testing.T, keys string, ks ...signingKey) []byte {
	t.Helper()
	var list []jwk.Key
	for _, k := range ks {
		j, err := jwk.FromRaw(k.public())
		if err != nil {
			t.Fatal(err)
		}
		_ = j.Set(jwk.KeyIDKey, k.kid) // no "use": absent means any use, signing included
		list = append(list, j)
	}
	b, err := json.Marshal(map[string][]jwk.Key{keys: list})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The key set's "keys" is read in its exact case, as jwx and every issuer write it.
func TestJWKSKeysInExactCase(t *testing.T) {
	iss := newTestIssuer(t)
	iss.setJWKS(jwksOf(t, "keys", keyring().rsa1))
	if _, err := NewVerifier(t.Context(), Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()}); err != nil {
		t.Fatalf(`a key set with "keys": %v`, err)
	}
	iss.setJWKS(jwksOf(t, "KEYS", keyring().rsa1))
	if _, err := NewVerifier(t.Context(), Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()}); err == nil {
		t.Error(`a key set with "KEYS" was read`)
	}
}

// A token verified before its key was withdrawn must not live on in the cache.
func TestWithdrawnKeyEvictsCachedTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1, kr.rsa2)
		v := newTestVerifier(t, iss, nil)
		ctx := context.Background()
		old := token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)
		if _, err := v.Verify(ctx, old); err != nil {
			t.Fatal(err)
		}
		// The issuer withdraws k1; a token naming an unknown kid makes the gateway refetch.
		iss.publish(t, kr.rsa2, kr.rsa3)
		time.Sleep(DefaultKeyRefreshInterval)
		if _, err := v.Verify(ctx, token(t, kr.rsa3, iss.claims(time.Now(), nil), nil)); err != nil {
			t.Fatalf("new key: %v", err)
		}
		if _, err := v.Verify(ctx, old); err == nil {
			t.Fatal("a token signed by a withdrawn key was still accepted from the cache")
		}
	})
}

func TestHealthReportsAnUnreachableIssuerButKeysStayInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, nil)
		ctx := context.Background()
		if err := v.Health(ctx); err != nil {
			t.Fatalf("Health with a reachable issuer: %v", err)
		}
		iss.down.Store(true)
		if err := v.Health(ctx); err != nil {
			t.Fatalf("Health fetched again at once: %v", err)
		}
		time.Sleep(healthInterval)
		if err := v.Health(ctx); err == nil {
			t.Fatal("Health = nil with the issuer unreachable")
		}
		if err := v.Ready(ctx); err != nil {
			t.Errorf("Ready = %v; cached keys are still loaded", err)
		}
		if _, err := v.Verify(ctx, token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)); err != nil {
			t.Errorf("a token signed by a cached key: %v", err)
		}
	})
}

// 50931e8/fa4d2f0 clip what a failed discovery quotes of the issuer's answer, so that the
// warning logged on every key refresh is never the issuer's choice of size. The JWKS fetch
// itself still quotes two things of the issuer's choosing whole: the status line of a non-200
// answer (resp.Status, up to the transport's 10 MiB header limit) and, through
// GuardRedirects, the Location of a refused redirect (req.URL.Redacted()).
func TestJWKSFetchErrorIsClipped(t *testing.T) {
	long := strings.Repeat("a", 400<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://keys.example/"+long, http.StatusFound)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		bw := bufio.NewWriter(conn)
		bw.WriteString("HTTP/1.1 500 " + long + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		bw.Flush()
		_ = buf
	}))
	defer srv.Close()
	s := newRemoteKeySet(Config{Issuer: srv.URL, HTTPClient: GuardRedirects(srv.Client(), srv.URL, false)})
	for _, path := range []string{"/status", "/redirect"} {
		_, err := s.fetch(context.Background(), srv.URL+path)
		if err == nil {
			t.Fatalf("%s: the fetch worked", path)
		}
		if len(err.Error()) > 1024 {
			t.Errorf("JWKS fetch of %s: an error of %d bytes (logged on every refresh), want one under 1 KiB", path, len(err.Error()))
		}
	}
}

// TestKeySetRemembersTheJWKSURL: discovery runs once; later refreshes go straight to the
// JWKS it named.
func TestKeySetRemembersTheJWKSURL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iss := newTestIssuer(t, keyring().rsa1)
		v := newTestVerifier(t, iss, nil)
		for range 2 {
			time.Sleep(healthInterval)
			if err := v.Health(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if d, j := iss.discoveries.Load(), iss.fetches.Load(); d != 1 || j != 3 {
			t.Errorf("discoveries = %d, JWKS fetches = %d; want 1 and 3", d, j)
		}
	})
}

// TestKeySetLogsTheFirstLoadOnly: the first key set loaded is logged at info, so an
// operator sees the keys arrive; the routine refreshes after it only at debug.
func TestKeySetLogsTheFirstLoadOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iss := newTestIssuer(t, keyring().rsa1)
		h := &records{}
		v := newTestVerifier(t, iss, func(c *Config) { c.Logger = slog.New(h) })
		for range 2 {
			time.Sleep(healthInterval)
			if err := v.Health(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		var levels []slog.Level
		for _, r := range h.find("auth: signing keys loaded") {
			levels = append(levels, r.Level)
		}
		if len(levels) != 3 || levels[0] != slog.LevelInfo || levels[1] != slog.LevelDebug || levels[2] != slog.LevelDebug {
			t.Errorf("levels of the load lines = %v, want [INFO DEBUG DEBUG]", levels)
		}
	})
}

// TestKeySetAcceptsKeysWithoutUse: a JWK without "use" may sign (RFC 7517 §4.2 makes the
// member optional); only one marked for another use is skipped.
func TestKeySetAcceptsKeysWithoutUse(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	iss.setJWKS(jwksOf(t, "keys", kr.rsa1, kr.ec256))
	v, err := NewVerifier(t.Context(), Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()})
	if err != nil {
		t.Fatalf("a JWKS of keys without use: %v", err)
	}
	for _, k := range []signingKey{kr.rsa1, kr.ec256} {
		if _, err := v.Verify(t.Context(), token(t, k, iss.claims(time.Now(), nil), nil)); err != nil {
			t.Errorf("a token of key %s: %v", k.kid, err)
		}
	}
}

// TestKeySetSkipsEncryptionKeys: a JWK marked "use": "enc" never verifies a signature (RFC
// 7517 §4.2): a token naming it is refused as signed by an unknown key, and a key set of only
// such keys holds no usable key.
func TestKeySetSkipsEncryptionKeys(t *testing.T) {
	kr := keyring()
	jwksWithUses := func(uses map[signingKey]string) []byte {
		t.Helper()
		var list []jwk.Key
		for k, use := range uses {
			j, err := jwk.FromRaw(k.public())
			if err != nil {
				t.Fatal(err)
			}
			_ = j.Set(jwk.KeyIDKey, k.kid)
			_ = j.Set(jwk.KeyUsageKey, use)
			list = append(list, j)
		}
		b, err := json.Marshal(map[string][]jwk.Key{"keys": list})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	iss := newTestIssuer(t)
	cfg := Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client(), CacheSize: -1}
	iss.setJWKS(jwksWithUses(map[signingKey]string{kr.rsa2: "enc"}))
	if _, err := NewVerifier(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "no usable signing key") {
		t.Fatalf(`a key set of one "enc" key: %v, want refused as holding no usable key`, err)
	}
	iss.setJWKS(jwksWithUses(map[signingKey]string{kr.rsa1: "sig", kr.rsa2: "enc"}))
	v, err := NewVerifier(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), token(t, kr.rsa2, iss.claims(time.Now(), nil), nil)); FailureReason(err) != ReasonUnknownKey {
		t.Errorf(`a token of the "enc" key: %v, want refused as signed by an unknown key`, err)
	}
	if _, err := v.Verify(t.Context(), token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)); err != nil {
		t.Errorf(`a token of the "sig" key: %v`, err)
	}
}

// TestJWKSSizeLimit: a JWKS of exactly 1 MiB is read; one byte more is refused, and the
// refusal says why rather than failing to parse a truncated document.
func TestJWKSSizeLimit(t *testing.T) {
	iss := newTestIssuer(t, keyring().rsa1)
	iss.mu.Lock()
	doc := iss.jwks
	iss.mu.Unlock()
	pad := func(n int) []byte { // the document, then whitespace up to n bytes
		return append(bytes.Clone(doc), bytes.Repeat([]byte(" "), n-len(doc))...)
	}
	cfg := Config{Issuer: iss.URL(), JWKSURL: iss.URL() + "/jwks", Audiences: []string{testResource}, HTTPClient: iss.client()}

	iss.setJWKS(pad(maxJWKSBytes))
	if _, err := NewVerifier(t.Context(), cfg); err != nil {
		t.Errorf("a JWKS of exactly %d bytes: %v", maxJWKSBytes, err)
	}
	iss.setJWKS(pad(maxJWKSBytes + 1))
	if _, err := NewVerifier(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("a JWKS of %d bytes: %v, want the size refusal", maxJWKSBytes+1, err)
	}
}

// TestKeysUsedUpToMaxAge: a key set is used without a fetch up to and including keyMaxAge
// after it was fetched; past that the next lookup refreshes it (TestStaleKeysAreRefreshed).
func TestKeysUsedUpToMaxAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
		iss.publish(t, kr.rsa2) // withdrawn at the issuer, but not yet noticed
		time.Sleep(keyMaxAge)
		if _, err := v.Verify(t.Context(), token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)); err != nil {
			t.Fatalf("key set exactly keyMaxAge old: %v", err)
		}
		if got := iss.fetches.Load(); got != 1 {
			t.Errorf("fetches = %d, want 1: a set keyMaxAge old is still fresh", got)
		}
	})
}

// TestHealthWhileAFetchOutlivesTheProbe: when the probe's context ends while a fetch is
// still on the network, Health answers with the last finished fetch (here: it worked), not
// with the probe's own deadline.
func TestHealthWhileAFetchOutlivesTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, nil)
		iss.holdFetches.Store(true)
		time.Sleep(healthInterval)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if err := v.Health(ctx); err != nil {
			t.Errorf("Health with the last fetch good and the next one slow = %v, want nil", err)
		}
		select {
		case <-iss.held:
		case <-time.After(10 * time.Second):
			t.Error("Health did not start a fetch")
		}
	})
}

// TestLoaderBacksOffThenStops runs the background loader of a verifier started while its
// identity provider is down, in a synctest bubble so its minutes of backoff pass at once:
// each retry waits between half and all of a backoff that doubles from loadRetryMin up to
// loadRetryMax, the attempts are numbered on, and once the provider is back the loader
// loads the keys and ends by itself.
func TestLoaderBacksOffThenStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iss := newTestIssuer(t, keyring().rsa1)
		iss.down.Store(true)
		h := &records{}
		cfg := Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client(), Logger: slog.New(h)}
		v, err := StartVerifier(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}

		time.Sleep(3 * time.Minute) // fake time: about a dozen retries
		synctest.Wait()
		retries := h.find("auth: retrying signing keys")
		if len(retries) < 8 {
			t.Fatalf("%d retries in 3 minutes, want at least 8", len(retries))
		}
		backoff := loadRetryMin
		for n, r := range retries {
			if got, want := attr(r, "attempt").Int64(), int64(n+2); got != want {
				t.Errorf("retry %d: attempt %d, want %d", n, got, want)
			}
			wait := attr(r, "in").Duration()
			if wait < backoff/2 || wait > backoff {
				t.Errorf("retry %d: waits %v, want within [%v, %v]", n, wait, backoff/2, backoff)
			}
			backoff = min(2*backoff, loadRetryMax)
		}
		if backoff != loadRetryMax {
			t.Errorf("backoff reached %v, want the cap %v", backoff, loadRetryMax)
		}

		iss.down.Store(false)
		time.Sleep(loadRetryMax)
		synctest.Wait()
		if err := v.Ready(t.Context()); err != nil {
			t.Fatalf("Ready after the provider came back: %v", err)
		}
		// Ready nudges a loader still running; none retries again.
		loaded := len(h.find("auth: retrying signing keys"))
		time.Sleep(2 * loadRetryMax)
		synctest.Wait()
		if n := len(h.find("auth: retrying signing keys")); n != loaded {
			t.Fatalf("the loader retried %d more times after the keys loaded", n-loaded)
		}
		if _, err := v.Verify(t.Context(), token(t, keyring().rsa1, iss.claims(time.Now(), nil), nil)); err != nil {
			t.Errorf("Verify after the loader ended: %v", err)
		}
	})
}

// TestJWKSKeyOfUnknownTypeIsSkipped: RFC 7517 §5 says a JWK Set reader SHOULD ignore keys
// whose kty it does not understand. jwk.Parse fails the whole set on one such key, so an
// issuer that adds a post-quantum signing key (kty "AKP", ML-DSA) or any other new key type
// next to its RSA key locks gemgate out: at start the keys never load (503 to every token,
// /readyz not ready); later every refresh fails, so the cached keys (withdrawn ones
// included) stay in use and tokens under a rotated-in kid are all refused.
func TestJWKSKeyOfUnknownTypeIsSkipped(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	iss.mu.Lock()
	var set map[string][]json.RawMessage
	if err := json.Unmarshal(iss.jwks, &set); err != nil {
		t.Fatal(err)
	}
	set["keys"] = append([]json.RawMessage{json.RawMessage(`{"kty":"AKP","alg":"ML-DSA-44","kid":"pq","use":"sig","pub":"AAAA"}`)}, set["keys"]...)
	iss.jwks, _ = json.Marshal(set)
	iss.mu.Unlock()

	v, err := NewVerifier(context.Background(), Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.client()})
	if err != nil {
		t.Fatalf("a JWKS holding the issuer's RSA key and one key of a type gemgate does not know: %v", err)
	}
	if _, err := v.Verify(context.Background(), token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)); err != nil {
		t.Errorf("token signed with the known RSA key: %v", err)
	}
}

// TestKeySetRefreshWithdrawsOnlyWhatChanged: a refresh that brings the same keys (same kid,
// key and "alg") withdraws nothing, so the verified-token cache is kept; a kid re-published
// with another "alg" or another key, or dropped, counts as withdrawn (the cache is cleared).
// The cache is watched through a token of k2, whose key never changes.
func TestKeySetRefreshWithdrawsOnlyWhatChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1, kr.rsa2) // rsa2 publishes its "alg"
		v := newTestVerifier(t, iss, nil)
		probe := token(t, kr.rsa2, iss.claims(time.Now(), map[string]any{"exp": time.Now().Add(24 * time.Hour).Unix()}), nil)
		if _, _, err := verifyNoting(v, probe); err != nil {
			t.Fatal(err)
		}
		refresh := func(what string, withdrawn bool) {
			t.Helper()
			time.Sleep(healthInterval)
			if err := v.Health(t.Context()); err != nil {
				t.Fatalf("%s: refresh: %v", what, err)
			}
			_, hit, err := verifyNoting(v, probe)
			if err != nil {
				t.Fatalf("%s: the probe token: %v", what, err)
			}
			if hit == withdrawn {
				t.Errorf("%s: the cache was kept = %v, want %v", what, hit, !withdrawn)
			}
		}
		refresh("the same set again", false)
		refresh("and again", false)

		other := kr.rsa2
		other.publishAlg = false // the same kid and key, now without "alg": another key to a verifier
		iss.publish(t, kr.rsa1, other)
		refresh("a kid re-published with another alg", true)

		iss.publish(t, kr.rsa1, other)
		refresh("unchanged after that", false)

		iss.publish(t, kr.rsaOther, other) // rsaOther: rsa1's kid, another key
		refresh("a kid re-published with another key", true)

		iss.publish(t, other)
		refresh("a kid dropped", true)
	})
}

// TestRekeyedKidDropsCachedTokens: the issuer replaces the key under a kid (the old key
// leaked; an IdP or an operator reusing kids "k1"/"rsa"), and publishes the new one. A fresh
// token signed with the old key is refused from then on, and so is a token verified with the
// old key before the change, which the cache drops.
func TestRekeyedKidDropsCachedTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, nil)
		ctx := context.Background()

		old := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"jti": "before-rekey", "exp": time.Now().Add(8 * time.Hour).Unix()}), nil)
		if _, err := v.Verify(ctx, old); err != nil {
			t.Fatalf("token before the rekey: %v", err)
		}

		iss.publish(t, kr.rsaOther) // same kid "k1", another key; rsa1 is withdrawn
		time.Sleep(2 * time.Minute)
		if err := v.Health(ctx); err != nil { // readiness probe refreshes the keys
			t.Fatalf("Health: %v", err)
		}
		fresh := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"jti": "after-rekey"}), nil)
		if _, err := v.Verify(ctx, fresh); err == nil {
			t.Fatal("setup: the withdrawn key still verifies a fresh token; the new key set is not in force")
		}
		if _, err := v.Verify(ctx, old); err == nil {
			t.Error("a token signed with the withdrawn key (kid k1 now names another key) is still accepted from the cache")
		}
	})
}

// TestKeylessTokenLeavesTheCacheWithItsLookup: a token without kid is verified with the
// issuer's only key. Once the set holds a second key, the lookup of no kid names no key and a
// fresh such token is refused; the one verified before must not be served from the cache
// either, which is only a shortcut of the lookup it would now fail.
func TestKeylessTokenLeavesTheCacheWithItsLookup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, nil)
		noKid := map[string]any{"kid": nil}
		old := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"jti": "before", "exp": time.Now().Add(8 * time.Hour).Unix()}), noKid)
		if _, err := v.Verify(t.Context(), old); err != nil {
			t.Fatalf("a token without kid against a one-key set: %v", err)
		}

		iss.publish(t, kr.rsa1, kr.rsa3) // rsa1 kept, rsa3 added: no kid names no key now
		time.Sleep(healthInterval)
		if err := v.Health(t.Context()); err != nil { // a readiness probe refreshes the keys
			t.Fatalf("Health: %v", err)
		}
		fresh := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"jti": "after"}), noKid)
		if _, err := v.Verify(t.Context(), fresh); err == nil {
			t.Fatal("setup: a fresh token without kid passes against a two-key set")
		}
		if _, hit, err := verifyNoting(v, old); err == nil {
			t.Errorf("a token without kid, verified while the set had one key, is still accepted (from the cache: %v) though its lookup now finds no key", hit)
		}
	})
}

// TestIssuerWithdrawingEveryKeyIsHeard: the issuer withdraws its only signing key (leaked) and
// publishes no other yet, or only keys this build cannot use (an "enc" key, a new kty). That
// set is the issuer's answer, read whole, not an issuer out of reach: the withdrawn key must
// stop verifying as a key withdrawn next to another does, fresh tokens and cached ones alike.
func TestIssuerWithdrawingEveryKeyIsHeard(t *testing.T) {
	for name, jwks := range map[string]string{
		"no keys":          `{"keys":[]}`,
		"an unusable kind": `{"keys":[{"kty":"AKP","kid":"pq","alg":"ML-DSA-65","pub":"AAAA"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				kr := keyring()
				iss := newTestIssuer(t, kr.rsa1)
				v := newTestVerifier(t, iss, nil)
				old := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"jti": "before", "exp": time.Now().Add(8 * time.Hour).Unix()}), nil)
				if _, err := v.Verify(t.Context(), old); err != nil {
					t.Fatalf("token before the withdrawal: %v", err)
				}

				iss.setJWKS([]byte(jwks)) // k1 withdrawn, no usable key in its place
				time.Sleep(keyMaxAge + time.Minute)
				_ = v.Health(t.Context()) // a readiness probe refreshes the keys
				fresh := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"jti": "after"}), nil)
				if _, err := v.Verify(t.Context(), fresh); err == nil {
					t.Errorf("a fresh token signed with a key withdrawn %v ago is accepted", keyMaxAge+time.Minute)
				}
				if _, hit, err := verifyNoting(v, old); err == nil {
					t.Errorf("a token verified before its key was withdrawn is still accepted (from the cache: %v)", hit)
				}
			})
		})
	}
}

// A key set past keyMaxAge is refreshed by the next lookup, so that a key the issuer withdrew
// stops verifying (keyMaxAge's promise). A token the cache holds must meet the same end: the
// cache is only a shortcut, and a verifier without it refuses the token then, since the
// lookup finds its kid gone. No probe refreshes the keys here: every request is the one token.
func TestCachedTokenMeetsTheKeySetsMaxAge(t *testing.T) {
	for _, cacheSize := range []int{0, -1} { // the default cache, and none
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				kr := keyring()
				iss := newTestIssuer(t, kr.rsa1)
				v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = cacheSize })
				ctx := context.Background()

				tok := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"exp": time.Now().Add(8 * time.Hour).Unix()}), nil)
				if _, err := v.Verify(ctx, tok); err != nil {
					t.Fatalf("token before the withdrawal: %v", err)
				}
				iss.publish(t, kr.rsa2) // k1 withdrawn
				time.Sleep(keyMaxAge + time.Minute)
				if _, err := v.Verify(ctx, tok); err == nil {
					t.Errorf("a token signed with a key withdrawn %v ago (past keyMaxAge, %v) is still accepted", keyMaxAge+time.Minute, keyMaxAge)
				}
			})
		})
	}
}
