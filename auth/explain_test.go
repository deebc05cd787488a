package auth

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Explain's findings and verdict, word for word, for tokens that pass and for each way a
// claim, the header or the signature fails; the issuer's URL shows as ISS. In a
// testing/synctest bubble, so that the times said are exact.
func TestExplainFindings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iss := newTestIssuer(t, keyring().rsa1, keyring().rsa2)
		kr := keyring()
		now := time.Now()
		good := func(overrides map[string]any) string {
			return token(t, kr.rsa1, iss.claims(now, overrides), nil)
		}
		localhost := strings.Replace(iss.URL(), "127.0.0.1", "localhost", 1)
		_, port, _ := strings.Cut(strings.TrimPrefix(iss.URL(), "http://"), ":")
		tests := []struct {
			name, token string
			down        bool
			want        string
		}{
			{"good", good(map[string]any{"azp": "client-a", "nbf": now.Unix()}), false, `
OK header: alg RS256, kid "k1"
OK signature: verified with the issuer's key "k1"
OK iss: "ISS"
OK aud: "https://gw.example.com/mcp" includes an accepted audience
INFO azp: "client-a" (the client the token was issued to)
OK exp: 2000-01-01T01:00:00Z: valid for another 1h0m0s
OK nbf: 2000-01-01T00:00:00Z
OK iat: 2000-01-01T00:00:00Z
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: accepted, signature checked`},
			{"expired", good(map[string]any{"exp": now.Add(-10 * time.Minute).Unix()}), false, `
OK header: alg RS256, kid "k1"
OK signature: verified with the issuer's key "k1"
OK iss: "ISS"
OK aud: "https://gw.example.com/mcp" includes an accepted audience
PROBLEM exp: 1999-12-31T23:50:00Z: expired 10m0s ago (allowed clock skew 30s)
OK iat: 2000-01-01T00:00:00Z
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: expired: token expired, signature checked`},
			{"not yet valid", good(map[string]any{"nbf": now.Add(5 * time.Minute).Unix(), "iat": now.Add(time.Hour).Unix()}), false, `
OK header: alg RS256, kid "k1"
OK signature: verified with the issuer's key "k1"
OK iss: "ISS"
OK aud: "https://gw.example.com/mcp" includes an accepted audience
OK exp: 2000-01-01T01:00:00Z: valid for another 1h0m0s
PROBLEM nbf: 2000-01-01T00:05:00Z is 5m0s ahead of this clock (allowed skew 30s)
PROBLEM iat: 2000-01-01T01:00:00Z is 1h0m0s ahead of this clock (allowed skew 30s)
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: not_yet_valid: token not yet valid, signature checked`},
			{"issuer by another host", good(map[string]any{"iss": localhost}), false, `
OK header: alg RS256, kid "k1"
OK signature: verified with the issuer's key "k1"
PROBLEM iss: "LOCALHOST", but gemgate accepts "ISS"
         hint: same issuer path under another host (localhost:PORT vs 127.0.0.1:PORT): clients and gemgate reach the identity provider by different URLs, and it names the one each used. Give it one public hostname (Keycloak: KC_HOSTNAME) that both use, or set issuer to the URL clients see
OK aud: "https://gw.example.com/mcp" includes an accepted audience
OK exp: 2000-01-01T01:00:00Z: valid for another 1h0m0s
OK iat: 2000-01-01T00:00:00Z
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: issuer: token issuer not accepted, signature checked`},
			{"another audience", good(map[string]any{"aud": []string{"a", "b"}, "azp": "client-a"}), false, `
OK header: alg RS256, kid "k1"
OK signature: verified with the issuer's key "k1"
OK iss: "ISS"
PROBLEM aud: "a" "b" names none of "https://gw.example.com/mcp", "gemgate-extra"
         hint: the token's aud must contain "https://gw.example.com/mcp" (gemgate's public MCP URL, public_url) or a value of the audiences setting; on Keycloak, give client "client-a" an audience mapper (or client scope) that adds it
INFO azp: "client-a" (the client the token was issued to)
OK exp: 2000-01-01T01:00:00Z: valid for another 1h0m0s
OK iat: 2000-01-01T00:00:00Z
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: audience: token audience not accepted, signature checked`},
			{"claims of the wrong types", good(map[string]any{"iss": 1, "aud": 2, "exp": "soon", "iat": true,
				"sub": 3, "preferred_username": "", "scp": []any{1}}), true, `
OK header: alg RS256, kid "k1"
NOT_CHECKED signature: the issuer's keys could not be loaded, so the signature is not checked: auth: discovery for issuer "ISS": Get "ISS/.well-known/openid-configuration": connection refused
PROBLEM iss: is not a string
PROBLEM aud: is not a string or an array of strings
PROBLEM exp: token claim exp is not a NumericDate (a JSON number of seconds)
PROBLEM iat: token claim iat is not a NumericDate (a JSON number of seconds)
PROBLEM sub: token claim sub is not a string
PROBLEM preferred_username: token claim preferred_username is empty (user_claim names it)
PROBLEM scope: token claim scp is not an array of strings
verdict: claims: token claim iss is not a string, signature not checked`},
			{"claims missing", good(map[string]any{"exp": nil, "sub": nil, "preferred_username": nil, "aud": nil}), true, `
OK header: alg RS256, kid "k1"
NOT_CHECKED signature: the issuer's keys could not be loaded, so the signature is not checked: auth: discovery for issuer "ISS": Get "ISS/.well-known/openid-configuration": connection refused
OK iss: "ISS"
PROBLEM aud: (none) names none of "https://gw.example.com/mcp", "gemgate-extra"
         hint: the token's aud must contain "https://gw.example.com/mcp" (gemgate's public MCP URL, public_url) or a value of the audiences setting
PROBLEM exp: is missing; gemgate requires it
OK iat: 2000-01-01T00:00:00Z
PROBLEM sub: token claim sub is missing or empty
PROBLEM preferred_username: token claim preferred_username is missing (user_claim names it)
INFO scope: "mcp:use" "mcp:write"
verdict: audience: token audience not accepted, signature not checked`},
			{"sub not a string, keys unavailable", good(map[string]any{"sub": 3}), true, `
OK header: alg RS256, kid "k1"
NOT_CHECKED signature: the issuer's keys could not be loaded, so the signature is not checked: auth: discovery for issuer "ISS": Get "ISS/.well-known/openid-configuration": connection refused
OK iss: "ISS"
OK aud: "https://gw.example.com/mcp" includes an accepted audience
OK exp: 2000-01-01T01:00:00Z: valid for another 1h0m0s
OK iat: 2000-01-01T00:00:00Z
PROBLEM sub: token claim sub is not a string
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: claims: token claim sub is not a string, signature not checked`},
			{"keys unavailable, claims pass", good(nil), true, `
OK header: alg RS256, kid "k1"
NOT_CHECKED signature: the issuer's keys could not be loaded, so the signature is not checked: auth: discovery for issuer "ISS": Get "ISS/.well-known/openid-configuration": connection refused
OK iss: "ISS"
OK aud: "https://gw.example.com/mcp" includes an accepted audience
OK exp: 2000-01-01T01:00:00Z: valid for another 1h0m0s
OK iat: 2000-01-01T00:00:00Z
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: keys_unavailable: the identity provider's signing keys are not loaded yet, signature not checked`},
			{"unknown kid", token(t, kr.rsa3, iss.claims(now, nil), nil), false, `
OK header: alg RS256, kid "k3"
PROBLEM signature: no key of the issuer has kid "k3" (the issuer publishes "k1", "k2")
OK iss: "ISS"
OK aud: "https://gw.example.com/mcp" includes an accepted audience
OK exp: 2000-01-01T01:00:00Z: valid for another 1h0m0s
OK iat: 2000-01-01T00:00:00Z
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: unknown_key: token signing key not known, signature checked`},
			{"bad signature", token(t, kr.rsaOther, iss.claims(now, map[string]any{"exp": nil}), nil), false, `
OK header: alg RS256, kid "k1"
PROBLEM signature: token signature invalid
OK iss: "ISS"
OK aud: "https://gw.example.com/mcp" includes an accepted audience
PROBLEM exp: is missing; gemgate requires it
OK iat: 2000-01-01T00:00:00Z
OK sub: "user-123"
OK preferred_username: "alice" (the user, from user_claim)
INFO scope: "mcp:use" "mcp:write"
verdict: signature: token signature invalid, signature checked`},
			{"claims not one object", signRaw(t, map[string]any{"alg": "RS256", "kid": "k1"}, []byte(`{"a":1}{}`), kr.rsa1.alg, kr.rsa1.priv), false, `
OK header: alg RS256, kid "k1"
OK signature: verified with the issuer's key "k1"
PROBLEM claims: malformed token: data after the claims object
verdict: malformed: malformed token, signature checked`},
			{"not a token", "nonsense", false, `
PROBLEM header: malformed token
verdict: malformed: malformed token, signature not checked`},
			{"too large", strings.Repeat("a", maxTokenBytes+1), false, `
PROBLEM token: larger than 16 KiB
verdict: malformed: malformed token, signature not checked`},
		}
		for _, tt := range tests {
			iss.down.Store(tt.down)
			cfg := Config{Issuer: iss.URL(), Audiences: []string{testResource, "gemgate-extra"},
				UserClaim: "preferred_username", HTTPClient: iss.client()}
			x, err := Explain(context.Background(), cfg, tt.token)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			var b strings.Builder
			statuses := map[FindingStatus]string{FindingOK: "OK", FindingProblem: "PROBLEM",
				FindingInfo: "INFO", FindingNotChecked: "NOT_CHECKED"}
			for _, f := range x.Findings {
				fmt.Fprintf(&b, "\n%s %s: %s", statuses[f.Status], f.Item, f.Detail)
			}
			verdict := "accepted"
			if x.Verdict != nil {
				verdict = FailureReason(x.Verdict) + ": " + Describe(x.Verdict)
			} else if x.Principal.User != "alice" {
				t.Errorf("%s: accepted as %+v", tt.name, x.Principal)
			}
			checked := map[bool]string{true: "signature checked", false: "signature not checked"}[x.SignatureChecked]
			fmt.Fprintf(&b, "\nverdict: %s, %s", verdict, checked)
			got := strings.NewReplacer(localhost, "LOCALHOST", iss.URL(), "ISS", ":"+port, ":PORT").Replace(b.String())
			if got != tt.want {
				t.Errorf("%s:\ngot:%s\nwant:%s", tt.name, got, tt.want)
			}
		}
	})
}
