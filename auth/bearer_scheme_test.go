package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBearerTokenOtherSchemes: a scheme that is not Bearer, whatever its length, is "no
// token" (the challenge without an error code), never a panic or a token. Six letters, as long
// as "Bearer", is the length the tab check reads one byte past: Digest, Basic1, a Bearer
// misspelt, each with and without credentials after it; and seven or more with a tab at the
// seventh byte after a word other than Bearer.
func TestBearerTokenOtherSchemes(t *testing.T) {
	for _, v := range []string{
		"Digest",
		`Digest username="alice", realm="mcp", nonce="n", uri="/mcp", response="r"`,
		"Basic1",
		"Basic1 YWxpY2U6c2VjcmV0",
		"Bearex abc",
		"Bearez",
		"Beare abc",
		"Bearers abc",
		"Negotiate abc",
		"Digest\tabc",
		"Bearex\tabc",
		"DPoPxx\tabc",
		"abcdef",
		"ABCDEFG\tabc",
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", v)
		var (
			tok string
			err error
		)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("BearerToken panicked on Authorization %q: %v", v, p)
				}
			}()
			tok, err = BearerToken(r)
		}()
		if tok != "" || !errors.Is(err, ErrNoToken) || errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Authorization %q: token %q, error %v; want no token (ErrNoToken)", v, tok, err)
		}
	}
	// The tab case it guards is still told apart, in any case of the scheme.
	for _, v := range []string{"Bearer\tabc", "bearer\tabc", "BEARER\tabc"} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", v)
		if _, err := BearerToken(r); err != errBearerTab {
			t.Errorf("Authorization %q: %v, want the tab refusal", v, err)
		}
	}
}

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
