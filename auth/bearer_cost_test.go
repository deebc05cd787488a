package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// b64TokenRef is RFC 6750 §2.1's b64token as a regular expression: the reference the
// table-driven IsBearerToken must agree with.
var b64TokenRef = regexp.MustCompile(`^[A-Za-z0-9\-._~+/]+=*$`)

// TestB64TokenAgreesWithRFC: every byte value alone, in the middle of a token, after its
// padding and as its padding, is judged as RFC 6750's grammar judges it.
func TestB64TokenAgreesWithRFC(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := string([]byte{byte(c)}) // a byte, not a rune
		for _, s := range []string{b, "ab" + b + "cd", "abc=" + b, "abc" + b + "=", b + b + "=="} {
			if got, want := IsBearerToken(s), b64TokenRef.MatchString(s); got != want {
				t.Errorf("IsBearerToken(%q) = %v, want %v", s, got, want)
			}
		}
	}
}

// TestBearerTokenQueryStillRefused: a request with no query string is read without parsing
// one, and an access_token in the query, however spelled, is still refused.
func TestBearerTokenQueryStillRefused(t *testing.T) {
	for _, q := range []string{"access_token=x", "a=1&access_token=", "access%5Ftoken=x", "access_token",
		"access_token=x;", "x=1;access_token=y", "a=1&b=2;access_token", "ACCESS_TOKEN=x"} {
		r := httptest.NewRequest(http.MethodPost, "https://h/mcp?"+q, nil)
		r.Header.Set("Authorization", "Bearer abc")
		if _, err := BearerToken(r); err != errTokenInQuery {
			t.Errorf("query %q: err %v, want errTokenInQuery", q, err)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "https://h/mcp?other=1", nil)
	r.Header.Set("Authorization", "Bearer abc")
	if tok, err := BearerToken(r); tok != "abc" || err != nil {
		t.Errorf("another query parameter: %q, %v", tok, err)
	}
}

// FuzzQueryTokenSeen: queryHasToken sees an access_token wherever a query parser would find
// one: Go's (url.ParseQuery, pairs at '&', a pair with ';' dropped) or one that splits at ';'
// too, as older servers and proxies do.
func FuzzQueryTokenSeen(f *testing.F) {
	for _, q := range []string{"access_token=x", "a=1;access_token=y", "access%5Ftoken", "x=%zz&access_token", "a=b"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := queryHasToken(raw)
		if v, _ := url.ParseQuery(raw); v.Has("access_token") && !got {
			t.Fatalf("url.ParseQuery finds access_token in %q; queryHasToken does not", raw)
		}
		if v, _ := url.ParseQuery(strings.ReplaceAll(raw, ";", "&")); v.Has("access_token") && !got {
			t.Fatalf("split at ';' too, %q has access_token; queryHasToken does not see it", raw)
		}
	})
}

// TestBearerTokenAllocs: reading a well-formed token from a request without a query string
// allocates nothing.
func TestBearerTokenAllocs(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "https://h/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+strings.Repeat("eyJhbGciOi.", 60))
	if n := testing.AllocsPerRun(100, func() {
		if _, err := BearerToken(r); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations per token read, want 0", n)
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
