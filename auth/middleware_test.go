package auth

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

func TestMiddlewareRefusesBadTokens(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1, kr.rsa2, kr.ec256)
	v := newTestVerifier(t, iss, func(c *Config) { c.UserClaim = "preferred_username" })
	now := time.Now()
	good := func(over map[string]any) map[string]any { return iss.claims(now, over) }
	sign := func(over map[string]any) string { return token(t, kr.rsa1, good(over), nil) }
	valid := sign(nil)

	attackerJWK, err := jwk.FromRaw(kr.rsaOther.public())
	if err != nil {
		t.Fatal(err)
	}
	tampered := func() string {
		parts := strings.Split(valid, ".")
		forged, _ := json.Marshal(good(map[string]any{"sub": "admin"}))
		return parts[0] + "." + b64(forged) + "." + parts[2]
	}()
	badSig := func() string {
		parts := strings.Split(valid, ".")
		sig := []byte(parts[2])
		mid := len(sig) / 2
		if sig[mid] == 'A' {
			sig[mid] = 'B'
		} else {
			sig[mid] = 'A'
		}
		return parts[0] + "." + parts[1] + "." + string(sig)
	}()

	tests := []struct {
		name   string
		req    func() *http.Request
		code   string // "" = challenge without error
		reason string
	}{
		{"no authorization header", func() *http.Request { return httptest.NewRequest("POST", "/mcp", nil) }, "", ReasonMissing},
		{"basic scheme", func() *http.Request {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.SetBasicAuth("alice", "secret")
			return r
		}, "", ReasonMissing},
		{"bearer with no token", func() *http.Request {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Header.Set("Authorization", "Bearer")
			return r
		}, "invalid_request", ReasonRequest},
		{"empty bearer", func() *http.Request { return bearerRequest("   ") }, "invalid_request", ReasonRequest},
		{"two authorization headers", func() *http.Request {
			r := bearerRequest(valid)
			r.Header.Add("Authorization", "Bearer "+valid)
			return r
		}, "invalid_request", ReasonRequest},
		{"token in query string", func() *http.Request {
			return httptest.NewRequest("POST", "/mcp?access_token="+valid, nil)
		}, "invalid_request", ReasonRequest},
		{"token in query string and header", func() *http.Request {
			r := bearerRequest(valid)
			r.URL.RawQuery = "access_token=" + valid
			return r
		}, "invalid_request", ReasonRequest},
		{"garbage", func() *http.Request { return bearerRequest("not-a-jwt") }, "invalid_token", ReasonMalformed},
		{"garbage with dots", func() *http.Request { return bearerRequest("a.b.c") }, "invalid_token", ReasonMalformed},
		{"five parts (JWE shape)", func() *http.Request { return bearerRequest(valid + ".x.y") }, "invalid_token", ReasonMalformed},
		{"token with trailing junk", func() *http.Request { return bearerRequest(valid + " extra") }, "invalid_token", ReasonMalformed},
		{"100 KiB token", func() *http.Request {
			return bearerRequest(sign(map[string]any{"pad": strings.Repeat("x", 100<<10)}))
		}, "invalid_token", ReasonMalformed},
		{"payload not an object", func() *http.Request {
			return bearerRequest(signRaw(t, map[string]any{"alg": "RS256", "kid": "k1"}, []byte(`["x"]`), jwa.RS256, kr.rsa1.priv))
		}, "invalid_token", ReasonMalformed},
		{"alg none", func() *http.Request {
			return bearerRequest(signRaw(t, map[string]any{"alg": "none", "kid": "k1"}, mustJSON(t, good(nil)), jwa.NoSignature, nil))
		}, "invalid_token", ReasonAlgorithm},
		{"HS256 keyed with the issuer's public key PEM", func() *http.Request {
			return bearerRequest(signRaw(t, map[string]any{"alg": "HS256", "kid": "k1"}, mustJSON(t, good(nil)), jwa.HS256, publicKeyPEM(t, kr.rsa1)))
		}, "invalid_token", ReasonAlgorithm},
		{"HS512", func() *http.Request {
			return bearerRequest(signRaw(t, map[string]any{"alg": "HS512", "kid": "k1"}, mustJSON(t, good(nil)), jwa.HS512, []byte("secret")))
		}, "invalid_token", ReasonAlgorithm},
		{"ES256 header over an RSA key", func() *http.Request {
			return bearerRequest(token(t, kr.ec256, good(nil), map[string]any{"kid": "k1"}))
		}, "invalid_token", ReasonAlgorithm},
		{"PS256 over a key published for RS256", func() *http.Request {
			k := kr.rsa2
			k.alg = jwa.PS256
			return bearerRequest(token(t, k, good(nil), nil))
		}, "invalid_token", ReasonAlgorithm},
		{"unknown kid", func() *http.Request { return bearerRequest(token(t, kr.rsa3, good(nil), nil)) }, "invalid_token", ReasonUnknownKey},
		{"no kid with several published keys", func() *http.Request {
			return bearerRequest(token(t, kr.rsa1, good(nil), map[string]any{"kid": nil}))
		}, "invalid_token", ReasonUnknownKey},
		{"other key, same kid", func() *http.Request { return bearerRequest(token(t, kr.rsaOther, good(nil), nil)) }, "invalid_token", ReasonSignature},
		{"tampered payload", func() *http.Request { return bearerRequest(tampered) }, "invalid_token", ReasonSignature},
		{"tampered signature", func() *http.Request { return bearerRequest(badSig) }, "invalid_token", ReasonSignature},
		{"jku header", func() *http.Request {
			return bearerRequest(token(t, kr.rsa1, good(nil), map[string]any{"jku": "https://evil.example/jwks"}))
		}, "invalid_token", ReasonHeader},
		{"x5u header", func() *http.Request {
			return bearerRequest(token(t, kr.rsa1, good(nil), map[string]any{"x5u": "https://evil.example/cert"}))
		}, "invalid_token", ReasonHeader},
		{"x5c header", func() *http.Request {
			return bearerRequest(token(t, kr.rsa1, good(nil), map[string]any{"x5c": []string{"MIIB"}}))
		}, "invalid_token", ReasonHeader},
		{"embedded jwk header signed by that key", func() *http.Request {
			return bearerRequest(token(t, kr.rsaOther, good(nil), map[string]any{"jwk": attackerJWK, "kid": "attacker"}))
		}, "invalid_token", ReasonHeader},
		{"crit header", func() *http.Request {
			return bearerRequest(token(t, kr.rsa1, good(nil), map[string]any{"crit": []string{"exp"}}))
		}, "invalid_token", ReasonHeader},
		{"b64 false", func() *http.Request {
			return bearerRequest(token(t, kr.rsa1, good(nil), map[string]any{"b64": false}))
		}, "invalid_token", ReasonHeader},
		{"wrong iss", func() *http.Request { return bearerRequest(sign(map[string]any{"iss": "https://evil.example"})) }, "invalid_token", ReasonIssuer},
		{"iss with trailing slash", func() *http.Request { return bearerRequest(sign(map[string]any{"iss": iss.URL() + "/"})) }, "invalid_token", ReasonIssuer},
		{"missing iss", func() *http.Request { return bearerRequest(sign(map[string]any{"iss": nil})) }, "invalid_token", ReasonIssuer},
		{"missing aud", func() *http.Request { return bearerRequest(sign(map[string]any{"aud": nil})) }, "invalid_token", ReasonAudience},
		{"wrong aud", func() *http.Request { return bearerRequest(sign(map[string]any{"aud": "https://other.example/mcp"})) }, "invalid_token", ReasonAudience},
		{"aud with trailing slash", func() *http.Request { return bearerRequest(sign(map[string]any{"aud": testResource + "/"})) }, "invalid_token", ReasonAudience},
		{"aud array without ours", func() *http.Request {
			return bearerRequest(sign(map[string]any{"aud": []string{"a", "b"}}))
		}, "invalid_token", ReasonAudience},
		{"expired", func() *http.Request {
			return bearerRequest(sign(map[string]any{"exp": now.Add(-time.Hour).Unix(), "iat": now.Add(-2 * time.Hour).Unix()}))
		}, "invalid_token", ReasonExpired},
		{"expired just beyond skew", func() *http.Request {
			return bearerRequest(sign(map[string]any{"exp": now.Add(-DefaultClockSkew - time.Second).Unix()}))
		}, "invalid_token", ReasonExpired},
		{"exp zero", func() *http.Request { return bearerRequest(sign(map[string]any{"exp": 0})) }, "invalid_token", ReasonExpired},
		{"no exp", func() *http.Request { return bearerRequest(sign(map[string]any{"exp": nil})) }, "invalid_token", ReasonClaims},
		{"exp not a number", func() *http.Request { return bearerRequest(sign(map[string]any{"exp": "tomorrow"})) }, "invalid_token", ReasonClaims},
		{"nbf in the future", func() *http.Request {
			return bearerRequest(sign(map[string]any{"nbf": now.Add(5 * time.Minute).Unix()}))
		}, "invalid_token", ReasonNotYetValid},
		{"iat far in the future", func() *http.Request {
			return bearerRequest(sign(map[string]any{"iat": now.Add(24 * time.Hour).Unix()}))
		}, "invalid_token", ReasonNotYetValid},
		{"missing sub", func() *http.Request { return bearerRequest(sign(map[string]any{"sub": nil})) }, "invalid_token", ReasonClaims},
		{"missing user claim", func() *http.Request {
			return bearerRequest(sign(map[string]any{"preferred_username": nil}))
		}, "invalid_token", ReasonClaims},
		{"empty user claim", func() *http.Request {
			return bearerRequest(sign(map[string]any{"preferred_username": ""}))
		}, "invalid_token", ReasonClaims},
		{"non-string user claim", func() *http.Request {
			return bearerRequest(sign(map[string]any{"preferred_username": 42}))
		}, "invalid_token", ReasonClaims},
		{"scope not a string", func() *http.Request { return bearerRequest(sign(map[string]any{"scope": 7})) }, "invalid_token", ReasonClaims},
		{"scp with a number", func() *http.Request {
			return bearerRequest(sign(map[string]any{"scope": nil, "scp": []any{"mcp:use", 3}}))
		}, "invalid_token", ReasonClaims},
	}
	if len(tests) < 30 {
		t.Fatalf("only %d cases", len(tests))
	}
	h := newMiddlewareHarness(v)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.mu.Lock()
			h.reasons = nil
			h.mu.Unlock()
			req := tt.req()
			rawAuth := req.Header.Get("Authorization")
			rec := h.serve(req)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401; body %s", rec.Code, rec.Body)
			}
			params := challengeParams(t, rec.Header())
			want := map[string]string{"scope": "mcp:use", "resource_metadata": testMetadataURL}
			if tt.code != "" {
				want["error"] = tt.code
				if params["error_description"] == "" {
					t.Errorf("no error_description")
				}
				want["error_description"] = params["error_description"]
			}
			if diff := cmp.Diff(want, params); diff != "" {
				t.Errorf("challenge params (-want +got):\n%s", diff)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			wantCode := tt.code
			if wantCode == "" {
				wantCode = "unauthorized"
			}
			if body["error"] != wantCode {
				t.Errorf("body error = %q, want %q", body["error"], wantCode)
			}
			// Nothing of the token may be echoed.
			if tok := strings.TrimSpace(strings.TrimPrefix(rawAuth, "Bearer")); len(tok) > 8 {
				for _, part := range strings.Split(tok, ".") {
					if len(part) > 8 && (strings.Contains(rec.Body.String(), part) || strings.Contains(rec.Header().Get("WWW-Authenticate"), part)) {
						t.Errorf("response echoes part of the token")
					}
				}
			}
			h.mu.Lock()
			reasons := h.reasons
			h.mu.Unlock()
			if diff := cmp.Diff([]string{tt.reason}, reasons); diff != "" {
				t.Errorf("OnFailure reasons (-want +got):\n%s", diff)
			}
		})
	}
	if h.calls != 0 {
		t.Errorf("next handler called %d times, want 0", h.calls)
	}
	// The harness works: the valid token passes.
	if rec := h.serve(bearerRequest(valid)); rec.Code != http.StatusNoContent || h.calls != 1 {
		t.Fatalf("valid token: status %d, calls %d", rec.Code, h.calls)
	}
}

func TestMiddlewareInsufficientScope(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	v := newTestVerifier(t, iss, nil)
	h := newMiddlewareHarness(v)
	tok := token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"scope": "openid mcp:read"}), nil)
	rec := h.serve(bearerRequest(tok))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status = %d, want 403", rec.Code)
	}
	want := map[string]string{
		"error":             "insufficient_scope",
		"scope":             "openid mcp:read mcp:use",
		"resource_metadata": testMetadataURL,
		"error_description": "required scope missing",
	}
	if diff := cmp.Diff(want, challengeParams(t, rec.Header())); diff != "" {
		t.Errorf("challenge (-want +got):\n%s", diff)
	}
	if h.calls != 0 {
		t.Errorf("next called")
	}
	if diff := cmp.Diff([]string{ReasonScope}, h.reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
}

func TestMiddlewarePutsPrincipalInContext(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	v := newTestVerifier(t, iss, nil)
	h := newMiddlewareHarness(v)
	claims := iss.claims(time.Now(), nil)
	rec := h.serve(bearerRequest(token(t, kr.rsa1, claims, nil)))
	if rec.Code != http.StatusNoContent || h.calls != 1 {
		t.Fatalf("status %d, calls %d", rec.Code, h.calls)
	}
	if h.last.Subject != "user-123" || h.last.User != "user-123" || !h.last.HasScope("mcp:write") {
		t.Errorf("principal = %+v", h.last)
	}
	if len(h.reasons) != 0 {
		t.Errorf("OnFailure called: %v", h.reasons)
	}
}

// failingVerifier fails without a verdict on the token, quoting it.
type failingVerifier struct{}

func (failingVerifier) Verify(_ context.Context, raw string) (Principal, error) {
	return Principal{}, errors.New("backend down while checking " + raw)
}

func TestMiddlewareVerifierFault(t *testing.T) {
	var logs bytes.Buffer
	calls := 0
	a := NewAuthenticator(AuthenticatorOptions{
		Verifier:            failingVerifier{},
		ResourceMetadataURL: testMetadataURL,
		Logger:              slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	rec := httptest.NewRecorder()
	a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls++ })).ServeHTTP(rec, bearerRequest("SECRET-TOKEN"))
	if rec.Code != http.StatusInternalServerError || calls != 0 {
		t.Fatalf("status %d, calls %d", rec.Code, calls)
	}
	if strings.Contains(logs.String()+rec.Body.String(), "SECRET") {
		t.Errorf("token leaked: log %q body %q", logs.String(), rec.Body.String())
	}
}

func TestInsufficientScopeHeader(t *testing.T) {
	a := NewAuthenticator(AuthenticatorOptions{ResourceMetadataURL: testMetadataURL, RequiredScopes: []string{"mcp:use"}})
	h := http.Header{}
	a.InsufficientScope(h, []string{"mcp:use"}, []string{"mcp:write", "mcp:use"}, "write access required")
	want := map[string]string{
		"error":             "insufficient_scope",
		"scope":             "mcp:use mcp:write",
		"resource_metadata": testMetadataURL,
		"error_description": "write access required",
	}
	if diff := cmp.Diff(want, challengeParams(t, h)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAnonymous(t *testing.T) {
	p := Principal{Subject: "local", User: "local", Scopes: []string{"mcp:use", "mcp:write"}}
	var got Principal
	var ok bool
	Anonymous(p)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = PrincipalFrom(r.Context())
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/mcp", nil))
	if !ok {
		t.Fatal("no principal")
	}
	if diff := cmp.Diff(p, got, cmp.AllowUnexported(Principal{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestMiddlewareKeepsToken: behind the middleware, the token it verified is in the request's
// context next to the principal, so that whoever passes it on (to a worker) need not read
// and check the header again; without the middleware there is none.
func TestMiddlewareKeepsToken(t *testing.T) {
	tok := "tok-alice"
	v := verifierFunc(func(_ context.Context, raw string) (Principal, error) {
		return Principal{User: "alice", Scopes: []string{"mcp:use"}}, nil
	})
	a := NewAuthenticator(AuthenticatorOptions{Verifier: v})
	var got string
	var ok bool
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = TokenFrom(r.Context())
		if p, _ := PrincipalFrom(r.Context()); p.User != "alice" {
			t.Errorf("principal %+v", p)
		}
	}))
	r := httptest.NewRequest(http.MethodPost, "https://h/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if !ok || got != tok {
		t.Fatalf("TokenFrom = %q, %v; want %q", got, ok, tok)
	}
	anon := Anonymous(Principal{User: "dev"})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = TokenFrom(r.Context())
	}))
	anon.ServeHTTP(httptest.NewRecorder(), r)
	if ok || got != "" {
		t.Fatalf("TokenFrom behind Anonymous = %q, %v; want none", got, ok)
	}
	if _, ok := TokenFrom(WithPrincipal(context.Background(), Principal{})); ok {
		t.Fatal("TokenFrom of a bare WithPrincipal reports a token")
	}
}

type verifierFunc func(context.Context, string) (Principal, error)

func (f verifierFunc) Verify(ctx context.Context, raw string) (Principal, error) { return f(ctx, raw) }

// TestMiddlewareOtherSchemesAreChallenged: through the middleware, such a header is answered
// 401 with a plain Bearer challenge and counted as a missing token; the handler never runs.
func TestMiddlewareOtherSchemesAreChallenged(t *testing.T) {
	h := newMiddlewareHarness(verifierFunc(func(context.Context, string) (Principal, error) {
		t.Error("the verifier was asked about a non-Bearer credential")
		return Principal{}, ErrInvalidToken
	}))
	for _, v := range []string{`Digest username="alice", response="r"`, "Basic1 YWxpY2U=", "Bearez abc", "Digest"} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", v)
		rec := h.serve(r)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", v, rec.Code)
			continue
		}
		if p := challengeParams(t, rec.Header()); p["error"] != "" {
			t.Errorf("Authorization %q: challenge error %q, want none (no token was presented)", v, p["error"])
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls != 0 {
		t.Errorf("the handler ran %d times", h.calls)
	}
	for _, r := range h.reasons {
		if r != ReasonMissing {
			t.Errorf("failure reason %q, want %q", r, ReasonMissing)
		}
	}
	if len(h.reasons) != 4 {
		t.Errorf("%d failures counted, want 4", len(h.reasons))
	}
}

func TestChallengeScopesNameWhatClientsShouldAskFor(t *testing.T) {
	for _, tt := range []struct {
		name      string
		challenge []string
		want      string
	}{
		{"default is the required scopes", nil, `Bearer scope="mcp:use", resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"`},
		{"configured", []string{"mcp:use", "mcp:write"}, `Bearer scope="mcp:use mcp:write", resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAuthenticator(AuthenticatorOptions{
				ResourceMetadataURL: "https://gw.example/.well-known/oauth-protected-resource/mcp",
				RequiredScopes:      []string{"mcp:use"},
				ChallengeScopes:     tt.challenge,
			})
			rec := httptest.NewRecorder()
			a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", nil))
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d", rec.Code)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.want {
				t.Errorf("WWW-Authenticate = %s\nwant %s", got, tt.want)
			}
		})
	}
}

func publicKeyPEM(t testing.TB, k signingKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// staticVerifier accepts every token as p.
type staticVerifier struct{ p Principal }

func (v staticVerifier) Verify(context.Context, string) (Principal, error) { return v.p, nil }

// TestRefusalLogNamesTheUserOnlyFor403: a 403 is a refusal of a known user, and its log
// line says who and with which scopes, so an operator can see who needs a grant. A 401
// has no verified user to name.
func TestRefusalLogNamesTheUserOnlyFor403(t *testing.T) {
	h := &records{}
	a := NewAuthenticator(AuthenticatorOptions{
		Verifier:            staticVerifier{Principal{User: "alice", Scopes: []string{"openid"}}},
		ResourceMetadataURL: testMetadataURL,
		RequiredScopes:      []string{"mcp:use"},
		Logger:              slog.New(h),
	})
	mw := a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a refused request reached the handler")
	}))

	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, bearerRequest("abc"))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status %d, want 403", rec.Code)
	}
	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", rec.Code)
	}

	lines := h.find("request refused by authentication")
	if len(lines) != 2 {
		t.Fatalf("%d refusal lines, want 2", len(lines))
	}
	if got := attr(lines[0], "user").String(); got != "alice" {
		t.Errorf("403 line: user = %q, want alice", got)
	}
	if got, ok := attr(lines[0], "granted_scopes").Any().([]string); !ok || !slices.Equal(got, []string{"openid"}) {
		t.Errorf("403 line: granted_scopes = %v, want [openid]", attr(lines[0], "granted_scopes"))
	}
	if got := attr(lines[1], "user"); got.Kind() != slog.KindAny || got.Any() != nil {
		t.Errorf("401 line names a user: %v", got)
	}
	if lines[1].Level != slog.LevelDebug {
		t.Errorf("a request without a token is logged at %v, want DEBUG", lines[1].Level)
	}
}
