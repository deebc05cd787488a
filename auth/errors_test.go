package auth

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestClip: values quoted in errors keep up to 64 bytes whole and are cut, marked, beyond.
func TestClip(t *testing.T) {
	s64 := strings.Repeat("a", 64)
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{s64[:63], s64[:63]},
		{s64, s64},
		{s64 + "b", s64 + "...(+1 more)"},
		{s64 + strings.Repeat("b", 1000), s64 + "...(+1000 more)"},
	}
	for _, tt := range tests {
		got := issuerError(tt.in, "").Error()
		if want := fmt.Sprintf("auth: token issuer %q not accepted", tt.want); got != want {
			t.Errorf("issuer of %d bytes: %q, want %q", len(tt.in), got, want)
		}
	}
}

// TestErrorTextCarriesTheCause: the key errors name their cause when there is one (the
// log then says why the keys are missing), and read whole without one.
func TestErrorTextCarriesTheCause(t *testing.T) {
	cause := errors.New("connection refused")
	tests := []struct {
		err  error
		want string
	}{
		{unknownKeyError("k9", nil), `auth: unknown signing key "k9"`},
		{unknownKeyError("k9", cause), `auth: unknown signing key "k9": connection refused`},
		{keysUnavailableError("https://idp", nil), `auth: signing keys of issuer "https://idp" not loaded yet`},
		{keysUnavailableError("https://idp", cause), `auth: signing keys of issuer "https://idp" not loaded yet: connection refused`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
