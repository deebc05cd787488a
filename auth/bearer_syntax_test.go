package auth

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

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
	var malformed *MalformedTokenError
	if got != "" || !errors.As(err, &malformed) || !errors.Is(err, ErrInvalidToken) {
		t.Errorf("BearerToken(Bearer ab=c) = %q, %v; want a *MalformedTokenError", got, err)
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
