package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
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

// TestB64TokenSyntax holds IsBearerToken to RFC 6750 §2.1, b64token =
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=": padding only at the end,
// never alone, and nothing else anywhere.
func TestB64TokenSyntax(t *testing.T) {
	tests := []struct {
		s  string
		ok bool
	}{
		{"a", true},
		{"azAZ09-._~+/", true},
		{"abc=", true},
		{"abc==", true},
		{"eyJ.eyJ.c2ln==", true},
		{"", false},
		{"=", false},
		{"==", false},
		{"=abc", false},
		{"abc=d", false},
		{"abc==d", false},
		{"abc= ", false},
		{"ab c", false},
		{`ab"c`, false},
		{"ab,c", false},
		{"ab\x00c", false},
		{"ab\x7fc", false},
		{"abé", false},
		{"@", false},
		{"[", false},
		{"`", false},
		{"{", false},
		{":", false},
	}
	for _, tt := range tests {
		if got := IsBearerToken(tt.s); got != tt.ok {
			t.Errorf("IsBearerToken(%q) = %v, want %v", tt.s, got, tt.ok)
		}
	}
}

// TestBearerTokenPadded: a padded token is a token, and reaches the verifier as sent.
func TestBearerTokenPadded(t *testing.T) {
	for _, tok := range []string{"abc=", "abc==", "a.b.c="} {
		r, _ := http.NewRequest(http.MethodPost, "https://h/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		got, err := BearerToken(r)
		if err != nil || got != tok {
			t.Errorf("BearerToken(Bearer %s) = %q, %v; want the token", tok, got, err)
		}
	}
	r, _ := http.NewRequest(http.MethodPost, "https://h/mcp", nil)
	r.Header.Set("Authorization", "Bearer ab=c")
	got, err := BearerToken(r)
	if got != "" || FailureReason(err) != ReasonMalformed || !errors.Is(err, ErrInvalidToken) {
		t.Errorf("BearerToken(Bearer ab=c) = %q, %v; want a malformed token", got, err)
	}
}

// TestBearerRequestErrorText: the refusals say what was wrong, under the package prefix,
// and never echo the token.
func TestBearerRequestErrorText(t *testing.T) {
	for _, err := range []error{errTokenInQuery, errTwoHeaders, errEmptyToken, errNotBearer} {
		msg := err.Error()
		if !strings.HasPrefix(msg, "auth: ") || len(msg) <= len("auth: ") {
			t.Errorf("error text %q lacks the auth: prefix or a reason", msg)
		}
	}
	if got, want := errTwoHeaders.Error(), "auth: more than one Authorization header"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		query   string
		want    string
		wantErr error
	}{
		{"bearer", []string{"Bearer abc.def.ghi"}, "", "abc.def.ghi", nil},
		{"case-insensitive scheme", []string{"bearer abc"}, "", "abc", nil},
		{"extra spaces", []string{"  Bearer    abc  "}, "", "abc", nil},
		{"tab", []string{"Bearer\tabc"}, "", "", ErrInvalidRequest},
		{"space and tab", []string{"Bearer \tabc"}, "", "", ErrInvalidToken},
		{"no-break space after the token", []string{"Bearer abc\u00a0"}, "", "", ErrInvalidToken},
		{"no-break space before the token", []string{"Bearer\u00a0abc"}, "", "", ErrNoToken},
		{"absent", nil, "", "", ErrNoToken},
		{"basic", []string{"Basic YWxpY2U6cw=="}, "", "", ErrNoToken},
		{"bearer-ish scheme", []string{"Bearerabc"}, "", "", ErrNoToken},
		{"scheme only", []string{"Bearer"}, "", "", ErrInvalidRequest},
		{"empty", []string{"Bearer   "}, "", "", ErrInvalidRequest},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", "", ErrInvalidRequest},
		{"query", nil, "access_token=abc", "", ErrInvalidRequest},
		{"query and header", []string{"Bearer abc"}, "x=1&access_token=abc", "", ErrInvalidRequest},
		{"other query ok", []string{"Bearer abc"}, "token=1", "abc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "https://h/mcp?"+tt.query, nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := BearerToken(r)
			if got != tt.want {
				t.Errorf("token = %q, want %q", got, tt.want)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
