package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

const testMetadataURL = "https://gw.example.com/.well-known/oauth-protected-resource/mcp"

// challengeParams parses one Bearer challenge with the Go SDK's client parser.
func challengeParams(t *testing.T, h http.Header) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		t.Fatalf("WWW-Authenticate %q: %v", h.Values("WWW-Authenticate"), err)
	}
	if len(cs) != 1 || cs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: want one Bearer challenge, got %+v", h.Values("WWW-Authenticate"), cs)
	}
	return cs[0].Params
}

type middlewareHarness struct {
	mw      http.Handler
	mu      sync.Mutex
	calls   int
	reasons []string
	last    Principal
}

func newMiddlewareHarness(v TokenVerifier) *middlewareHarness {
	h := &middlewareHarness{}
	a := NewAuthenticator(AuthenticatorOptions{
		Verifier:            v,
		ResourceMetadataURL: testMetadataURL,
		RequiredScopes:      []string{"mcp:use"},
		OnFailure: func(_ *http.Request, reason string) {
			h.mu.Lock()
			h.reasons = append(h.reasons, reason)
			h.mu.Unlock()
		},
	})
	h.mw = a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFrom(r.Context())
		if !ok {
			panic("no principal in context")
		}
		h.mu.Lock()
		h.calls++
		h.last = p
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return h
}

func (h *middlewareHarness) serve(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.mw.ServeHTTP(rec, r)
	return rec
}

func bearerRequest(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

func TestMiddlewareRefusesBadTokens(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1, kr.rsa2, kr.ec256)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.UserClaim = "preferred_username" })
	now := clock.Now()
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

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMiddlewareInsufficientScope(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	h := newMiddlewareHarness(v)
	tok := token(t, kr.rsa1, iss.claims(clock.Now(), map[string]any{"scope": "openid mcp:read"}), nil)
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
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	h := newMiddlewareHarness(v)
	claims := iss.claims(clock.Now(), nil)
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
