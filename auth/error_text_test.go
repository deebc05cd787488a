package auth

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorTextCarriesTheCause: the key errors name their cause when there is one (the
// log then says why the keys are missing), and read whole without one.
func TestErrorTextCarriesTheCause(t *testing.T) {
	cause := errors.New("connection refused")
	tests := []struct {
		err  error
		want string
	}{
		{&UnknownKeyError{KeyID: "k9"}, `auth: unknown signing key "k9"`},
		{&UnknownKeyError{KeyID: "k9", Err: cause}, `auth: unknown signing key "k9": connection refused`},
		{&KeysUnavailableError{Issuer: "https://idp"}, `auth: signing keys of issuer "https://idp" not loaded yet`},
		{&KeysUnavailableError{Issuer: "https://idp", Err: cause}, `auth: signing keys of issuer "https://idp" not loaded yet: connection refused`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestIssuerHint: each way an iss can miss the configured issuer gets its own hint.
func TestIssuerHint(t *testing.T) {
	tests := []struct {
		got, want, hint string // hint: a phrase of the hint; "" for none
	}{
		{"http://localhost:8080/realms/x", "http://keycloak:8080/realms/x", "another host"},
		{"http://idp.example/realms/x", "https://idp.example/realms/x", "another scheme"},
		{"https://idp.example/realms/x/", "https://idp.example/realms/x", "trailing slash"},
		{"https://idp.example/realms/a", "https://idp.example/realms/b", "another Keycloak realm"},
		{"https://idp.example/a", "https://other.example/b", ""},
		{"not a url", "https://idp.example", ""},
	}
	for _, tt := range tests {
		h := issuerHint(tt.got, tt.want)
		if tt.hint == "" && h != "" || !strings.Contains(h, tt.hint) {
			t.Errorf("issuerHint(%q, %q) = %q, want a hint with %q", tt.got, tt.want, h, tt.hint)
		}
	}
}
