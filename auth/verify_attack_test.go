package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestScopeSplitsOnSpaceOnly: RFC 6749 §3.3 (and RFC 9068 §2.2.3) scope is scope-tokens
// separated by SP (%x20) alone. strings.Fields also splits at tab, VT, FF, CR, LF, NEL,
// NO-BREAK SPACE, U+2028, U+3000, ...: a single scope value an issuer grants verbatim
// (a Keycloak dynamic scope "tenant:*", a Hydra wildcard, a custom mapper) such as
// "tenant:x\u00a0mcp:write" becomes the write scope at gemgate, while the issuer and every
// other reader see one scope. The token must either be refused or grant no mcp:write.
func TestScopeSplitsOnSpaceOnly(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	for _, sep := range []string{"\u00a0", "\u0085", "\u2028", "\u3000", "\t", "\n", "\v", "\f"} {
		for _, form := range []string{"scope", "scp"} {
			t.Run(fmt.Sprintf("%s %U", form, []rune(sep)[0]), func(t *testing.T) {
				val := "mcp:use tenant:x" + sep + "mcp:write"
				over := map[string]any{"scope": val}
				if form == "scp" {
					over = map[string]any{"scope": nil, "scp": val}
				}
				p, err := v.Verify(context.Background(), token(t, kr.rsa1, iss.claims(clock.Now(), over), nil))
				if err != nil {
					return // refusing such a token is fine too
				}
				if p.HasScope("mcp:write") {
					t.Errorf("%s %q granted mcp:write (scopes %q): split at %U, which is no scope separator", form, val, p.Scopes, []rune(sep)[0])
				}
			})
		}
	}
}

// TestRekeyedKidDropsCachedTokens: the issuer replaces the key under a kid (the old key
// leaked; an IdP or an operator reusing kids "k1"/"rsa"), and publishes the new one. A fresh
// token signed with the old key is refused from then on, but a token verified with the old
// key before the change stays accepted from the cache until it expires: the cache is
// cleared only when a kid disappears, not when the key it names changes.
func TestRekeyedKidDropsCachedTokens(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	ctx := context.Background()

	old := token(t, kr.rsa1, iss.claims(clock.Now(), map[string]any{"jti": "before-rekey", "exp": clock.Now().Add(8 * time.Hour).Unix()}), nil)
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatalf("token before the rekey: %v", err)
	}

	iss.publish(t, kr.rsaOther) // same kid "k1", another key; rsa1 is withdrawn
	clock.advance(2 * time.Minute)
	if err := v.Health(ctx); err != nil { // readiness probe refreshes the keys
		t.Fatalf("Health: %v", err)
	}
	fresh := token(t, kr.rsa1, iss.claims(clock.Now(), map[string]any{"jti": "after-rekey"}), nil)
	if _, err := v.Verify(ctx, fresh); err == nil {
		t.Fatal("setup: the withdrawn key still verifies a fresh token; the new key set is not in force")
	}
	if _, err := v.Verify(ctx, old); err == nil {
		t.Error("a token signed with the withdrawn key (kid k1 now names another key) is still accepted from the cache")
	}
}

// TestSignatureHasOneSpelling: jwx decodes base64 leniently (padding accepted, standard
// alphabet accepted, unused trailing bits ignored), so one signed token has many spellings
// that all verify. Anything keyed on the token's text (the cache, a revocation or replay
// list in front, a proxy hashing the Authorization header) sees different tokens where
// gemgate sees one. RFC 7515 §2: base64url without padding, and only that.
func TestSignatureHasOneSpelling(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.CacheSize = -1 })
	tok := token(t, kr.rsa1, iss.claims(clock.Now(), nil), nil)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("the canonical token: %v", err)
	}
	dot := strings.LastIndexByte(tok, '.')
	sig := tok[dot+1:]
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		t.Fatal(err)
	}
	// The last character carries 4 unused bits for a 256-byte signature: flip the lowest.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, sig[len(sig)-1])
	spare := sig[:len(sig)-1] + string(alphabet[last^1])
	variants := map[string]string{
		"padded signature":          tok + "==",
		"unused bits set":           tok[:dot+1] + spare,
		"standard alphabet, padded": tok[:dot+1] + base64.StdEncoding.EncodeToString(raw),
	}
	for name, alt := range variants {
		if alt == tok {
			continue
		}
		if _, err := v.Verify(context.Background(), alt); err == nil {
			t.Errorf("%s: another spelling of the same token verified", name)
		}
	}
}

// TestDiscoveryDocumentIsBounded: the JWKS is read up to 1 MiB, but discovery (go-oidc's
// NewProvider, io.ReadAll) reads the issuer's openid-configuration without any bound: an
// issuer, a proxy in front of it or a MITM on an allow_insecure_http link that answers
// with an endless document makes gemgate buffer it all, at start and on every retry while
// keys are not loaded (and for the token endpoint's discovery of the token exchange).
func TestDiscoveryDocumentIsBounded(t *testing.T) {
	const total = 96 << 20
	var written atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		head := fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q,"pad":"`, srv.URL, srv.URL+"/jwks")
		n, _ := w.Write([]byte(head))
		written.Add(int64(n))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for written.Load() < total {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = NewVerifier(ctx, Config{Issuer: srv.URL, Audiences: []string{testResource}, HTTPClient: srv.Client()})
	if got := written.Load(); got > 16<<20 {
		t.Errorf("gemgate read %d MiB of the issuer's discovery document; it should stop at a bound like the JWKS's 1 MiB", got>>20)
	}
}

// TestLoneSurrogateEscapesAreRefused: the claims are read so that one payload has one
// meaning (invalid UTF-8 is refused because encoding/json "would quietly replace bad bytes").
// A lone UTF-16 surrogate escape is the same thing spelled in JSON: encoding/json turns
// "\ud800", "\udbff", "\udc00" ... alike into U+FFFD, so distinct user names (or subjects)
// as the issuer and any other reader keep them become one principal at gemgate: one worker,
// one {user} account and data folder, one session owner.
func TestLoneSurrogateEscapesAreRefused(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.UserClaim = "preferred_username" })
	sign := func(esc string) string {
		c := iss.claims(clock.Now(), map[string]any{"preferred_username": nil, "sub": nil})
		payload := mustJSON(t, c)
		payload = append(payload[:len(payload)-1], []byte(`,"sub":"user-`+esc+`","preferred_username":"alice`+esc+`"}`)...)
		return signRaw(t, map[string]any{"alg": "RS256", "kid": "k1", "typ": "at+jwt"}, payload, kr.rsa1.alg, kr.rsa1.priv)
	}
	a, errA := v.Verify(context.Background(), sign(`\ud800`))
	b, errB := v.Verify(context.Background(), sign(`\udc00`))
	if errA == nil && errB == nil && a.User == b.User && a.Subject == b.Subject {
		t.Errorf("two different signed identities (\\ud800 and \\udc00) became one principal: sub %q, user %q", a.Subject, a.User)
	}
}

// boundedBody: an answer of exactly the bound reads whole; one byte more fails the read.
func TestBoundedBodyFailsPastItsBound(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantErr bool
	}{{0, false}, {10, false}, {11, true}, {4096, true}} {
		b := &boundedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("a", tc.size))), left: 10}
		got, err := io.ReadAll(b)
		if tc.wantErr != (err != nil) || !tc.wantErr && len(got) != tc.size {
			t.Errorf("a body of %d bytes, bound 10: read %d, %v", tc.size, len(got), err)
		}
		if tc.wantErr && !errors.Is(err, errBodyTooLarge) {
			t.Errorf("a body of %d bytes, bound 10: %v, want errBodyTooLarge", tc.size, err)
		}
	}
}
