package main

import (
	"strings"
	"testing"
)

// gemgate dev runs its own issuer, which alone decides who is who: like another issuer, keys
// from elsewhere (jwks_url, whose holder would mint tokens dev accepts) or another token
// endpoint (exchange_token_url, which would be sent dev's exchange secret and every caller's
// token) are refused, also from a GEMGATE_ variable left over in the shell.
func TestDevRefusesKeysAndTokenEndpointOfAnotherIssuer(t *testing.T) {
	for _, tc := range []struct{ key, env, url string }{
		{"jwks_url", "GEMGATE_JWKS_URL", "https://127.0.0.1:1/realms/team/protocol/openid-connect/certs"},
		{"exchange_token_url", "GEMGATE_EXCHANGE_TOKEN_URL", "https://127.0.0.1:1/realms/team/protocol/openid-connect/token"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Setenv(tc.env, tc.url)
			_, err := startDev(t, unsandboxed("--listen", freeAddr(t), "--data-dir", t.TempDir(), "--metrics-listen", "off",
				"--worker-credential", "exchange")...)
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("gemgate dev with %s=%s: %v; want it refused, naming %s", tc.env, tc.url, err, tc.key)
			}
		})
	}
}
