package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Every attribute of RefusalLogAttrs, in order, for a refusal of each kind the verifier
// makes of a well-formed JWS and of one it cannot read; the issuer's URL shows as ISS.
func TestRefusalLogAttrsInFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1, kr.rsa2)
		v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1; c.UserClaim = "preferred_username" })
		now := time.Now()
		claims := func(o map[string]any) map[string]any { return iss.claims(now, o) }
		manyAud := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
		tests := []struct{ name, tok, want string }{
			{"issuer", token(t, kr.rsa1, claims(map[string]any{"iss": "https://other.example/realms/y", "azp": "c1"}), nil),
				" reason=issuer kid=k1 alg=RS256 iss=https://other.example/realms/y aud=[https://gw.example.com/mcp] azp=c1 expected_iss=ISS"},
			{"audience", token(t, kr.rsa1, claims(map[string]any{"aud": manyAud, "azp": "c1"}), nil),
				" reason=audience kid=k1 alg=RS256 iss=ISS aud=[a b c d e f g h …] azp=c1 expected_aud=[https://gw.example.com/mcp gemgate-extra] hint=the token's aud must contain \"https://gw.example.com/mcp\" (gemgate's public MCP URL, public_url) or a value of the audiences setting; on Keycloak, give client \"c1\" an audience mapper (or client scope) that adds it"},
			{"expired", token(t, kr.rsa1, claims(map[string]any{"exp": now.Add(-2 * time.Minute).Unix()}), nil),
				" reason=expired kid=k1 alg=RS256 iss=ISS aud=[https://gw.example.com/mcp] exp=1999-12-31 23:58:00 +0000 UTC now=2000-01-01 00:00:00 +0000 UTC expired_for=2m0s allowed_skew=30s hint=the token expired moments ago: the client should refresh it; if fresh tokens fail too, gemgate's clock is ahead of the issuer's"},
			{"not yet valid", token(t, kr.rsa1, claims(map[string]any{"nbf": now.Add(3 * time.Minute).Unix()}), nil),
				" reason=not_yet_valid kid=k1 alg=RS256 iss=ISS aud=[https://gw.example.com/mcp] nbf=2000-01-01 00:03:00 +0000 UTC now=2000-01-01 00:00:00 +0000 UTC clock_skew=3m0s allowed_skew=30s hint=the issuer's clock is ahead of gemgate's: synchronise both clocks (NTP)"},
			{"claim", token(t, kr.rsa1, claims(map[string]any{"sub": nil}), nil),
				" reason=claims kid=k1 alg=RS256 iss=ISS aud=[https://gw.example.com/mcp] claim=sub problem=is missing or empty"},
			{"unknown kid", token(t, kr.rsa3, claims(map[string]any{"iss": "https://other.example/realms/y"}), nil),
				" reason=unknown_key kid=k3 alg=RS256 iss=https://other.example/realms/y aud=[https://gw.example.com/mcp] claims_unverified=true known_kids=[k1 k2] hint=no key of the configured issuer has this kid; the token names issuer \"https://other.example/realms/y\" (a token of another issuer or realm?)"},
			{"unknown kid, no iss", token(t, kr.rsa3, claims(map[string]any{"iss": nil}), nil),
				" reason=unknown_key kid=k3 alg=RS256 iss= aud=[https://gw.example.com/mcp] claims_unverified=true known_kids=[k1 k2]"},
			{"unknown kid, no kid", token(t, kr.rsa3, claims(nil), map[string]any{"kid": nil}),
				" reason=unknown_key alg=RS256 iss=ISS aud=[https://gw.example.com/mcp] claims_unverified=true known_kids=[k1 k2] hint=no key of the configured issuer has this kid; the token names issuer \"ISS\" (a token of another issuer or realm?)"},
			{"signature", token(t, kr.rsaOther, claims(nil), nil),
				" reason=signature kid=k1 alg=RS256 iss=ISS aud=[https://gw.example.com/mcp] claims_unverified=true"},
			{"algorithm", token(t, kr.ec256, claims(nil), map[string]any{"kid": "k1"}),
				" reason=algorithm kid=k1 alg=ES256 iss=ISS aud=[https://gw.example.com/mcp] claims_unverified=true token_alg=ES256"},
			{"unreadable claims", signRaw(t, map[string]any{"alg": "RS256", "kid": "k1"}, []byte(`{"a":1}{}`), kr.rsa1.alg, kr.rsa1.priv),
				" reason=malformed kid=k1 alg=RS256 problem=data after the claims object"},
			{"unknown kid, unreadable claims", signRaw(t, map[string]any{"alg": "RS256", "kid": "k9"}, []byte(`{"a":1,"a":2}`), kr.rsa1.alg, kr.rsa1.priv),
				" reason=unknown_key kid=k9 alg=RS256 known_kids=[k1 k2]"},
			{"header", token(t, kr.rsa1, claims(nil), map[string]any{"jku": "https://x"}),
				" reason=header header=jku"},
			{"not a JWS", "a.b",
				" reason=malformed problem=not a compact JWS"},
			{"typ", token(t, kr.rsa1, claims(map[string]any{"typ": "ID"}), nil),
				" reason=claims kid=k1 alg=RS256 iss=ISS aud=[https://gw.example.com/mcp] claim=typ problem=names a ID token, not an access token"},
		}
		for _, tt := range tests {
			_, err := v.Verify(context.Background(), tt.tok)
			var b strings.Builder
			for _, a := range RefusalLogAttrs(err) {
				fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			}
			got := strings.ReplaceAll(b.String(), iss.URL(), "ISS")
			if got != tt.want {
				t.Errorf("%s:\ngot: %s\nwant:%s", tt.name, got, tt.want)
			}
		}
	})
}

// The same for refusals made after verification (the user name, the scopes) and for token
// errors built without a token's facts.
func TestRefusalLogAttrsOfBareErrors(t *testing.T) {
	exp := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		err  error
		want string
	}{
		{userNameError("preferred_username", `"root"`, errors.New("names a system account")),
			" reason=user_name claim=preferred_username user=\"root\" problem=names a system account"},
		{userTakenError("preferred_username", `"bob"`, `"s2"`, `"s1"`),
			" reason=user_taken claim=preferred_username user=\"bob\" subject=\"s2\" bound_subject=\"s1\" hint=two subjects of the issuer carry one user name; workers act as the name, so only the first is served. Use a user_claim the identity provider never lets users change or reuse (sub; on Keycloak, preferred_username with Edit username off)"},
		{subjectNamesError("preferred_username", `"bob9"`, `"s1"`),
			" reason=user_names_per_subject claim=preferred_username user=\"bob9\" subject=\"s1\" max_names_per_subject=8 hint=one subject carries ever new user names (an account renamed again and again); each is bound to it until gemgate restarts, so past a few new ones are refused. Use a user_claim the identity provider never lets users change or reuse (sub; on Keycloak, preferred_username with Edit username off)"},
		{userNamesFullError(3),
			" reason=user_names_full max_user_names=3"},
		{scopeError([]string{"mcp:use"}),
			" reason=scope missing_scopes=[mcp:use]"},
		{issuerError("https://idp/realms/a", "https://idp/realms/b"),
			" reason=issuer iss=https://idp/realms/a expected_iss=https://idp/realms/b hint=a token of another Keycloak realm"},
		{audienceError([]string{"x"}, []string{testResource}, "c1"),
			" reason=audience aud=[x] expected_aud=[https://gw.example.com/mcp] hint=the token's aud must contain \"https://gw.example.com/mcp\" (gemgate's public MCP URL, public_url) or a value of the audiences setting; on Keycloak, give client \"c1\" an audience mapper (or client scope) that adds it"},
		{expiredError(exp, exp.Add(time.Hour)),
			" reason=expired exp=2000-01-01 00:00:00 +0000 UTC now=2000-01-01 01:00:00 +0000 UTC expired_for=1h0m0s allowed_skew=30s"},
		{unknownKeyError("k9", errNoSuchKey),
			" reason=unknown_key"},
		{keysUnavailableError("https://idp", nil),
			" reason=keys_unavailable"},
		{ErrNoToken,
			" reason=missing"},
		{errTokenInQuery,
			" reason=request"},
	}
	for _, tt := range tests {
		var b strings.Builder
		for _, a := range RefusalLogAttrs(tt.err) {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		if got := b.String(); got != tt.want {
			t.Errorf("%T:\ngot: %s\nwant:%s", tt.err, got, tt.want)
		}
	}
}
