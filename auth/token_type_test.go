package auth

import (
	"context"
	"errors"
	"testing"
)

// Only access tokens stand for a caller. The issuer signs other JWTs with the same keys: an
// ID, refresh, offline or logout token (Keycloak's "typ" claim says which), or a JWT whose
// header types it as another kind (a DPoP proof, a logout token, a security event). Given
// this resource's audience (a client named so, an audience mapper), each would otherwise
// verify like an access token.
func TestOnlyAccessTokensAreAccepted(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.CacheSize = -1 })
	ctx := context.Background()
	accepted := []struct {
		name   string
		claims map[string]any
		header map[string]any
	}{
		{"Keycloak access token", map[string]any{"typ": "Bearer"}, map[string]any{"typ": "JWT"}},
		{"RFC 9068", nil, map[string]any{"typ": "at+jwt"}},
		{"RFC 9068, media type", nil, map[string]any{"typ": "application/AT+JWT"}},
		{"no typ", nil, map[string]any{"typ": nil}},
		{"JOSE", nil, map[string]any{"typ": "JOSE"}},
	}
	for _, tc := range accepted {
		if _, err := v.Verify(ctx, token(t, kr.rsa1, iss.claims(clock.Now(), tc.claims), tc.header)); err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
	}
	refused := []struct {
		name   string
		claims map[string]any
		header map[string]any
	}{
		{"Keycloak ID token", map[string]any{"typ": "ID"}, map[string]any{"typ": "JWT"}},
		{"Keycloak refresh token", map[string]any{"typ": "Refresh"}, nil},
		{"Keycloak offline token", map[string]any{"typ": "Offline"}, nil},
		{"Keycloak logout token", map[string]any{"typ": "Logout"}, nil},
		{"DPoP-bound token", map[string]any{"typ": "DPoP", "cnf": map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}, nil},
		{"certificate-bound token", map[string]any{"cnf": map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}}, nil},
		{"DPoP proof", nil, map[string]any{"typ": "dpop+jwt"}},
		{"back-channel logout token", nil, map[string]any{"typ": "logout+jwt"}},
		{"security event token", nil, map[string]any{"typ": "application/secevent+jwt"}},
		{"logout token with a parameter", nil, map[string]any{"typ": "logout+jwt; v=1"}},
		{"DPoP proof with white space", nil, map[string]any{"typ": " dpop+jwt "}},
	}
	for _, tc := range refused {
		_, err := v.Verify(ctx, token(t, kr.rsa1, iss.claims(clock.Now(), tc.claims), tc.header))
		if !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: %v, want an invalid token", tc.name, err)
		}
	}
}
