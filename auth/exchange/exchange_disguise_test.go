package exchange

import (
	"encoding/base64"
	"fmt"
	"testing"
)

// The echo check once compares the issued token with the subject token byte for byte, so an
// issuer (or a token URL that is not the issuer's) that hands back the caller's own token with
// one byte of difference, or a fresh token minted for gemgate's own audience rather than the
// backend's, still makes `exchange` a pass-through of a token gemgate accepts. The issued
// token must not be the subject token in any spelling a bearer reader takes for it (HTTP
// trims the spaces around a header value), and a JWT issued for the caller's audience and not
// for cfg.Audience is not a credential for the backend.
func TestExchangeRefusesTheSubjectTokenInDisguise(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	userTok := header + "." + b64([]byte(`{"iss":"https://idp","aud":"https://gemgate.example/mcp","sub":"alice","jti":"1"}`)) + ".c2ln"
	fresh := header + "." + b64([]byte(`{"iss":"https://idp","aud":"https://gemgate.example/mcp","sub":"alice","jti":"2"}`)) + ".c2ln"
	for _, tc := range []struct{ name, issued string }{
		{"the subject token with a trailing space", userTok + " "},
		{"the subject token with a leading tab", "\t" + userTok},
		{"a fresh token for gemgate's audience, not the backend's", fresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, tc.issued)
			srv := tokenEndpoint(t, 200, body, new(map[string]any))
			ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			cred, err := ex.Exchange(t.Context(), userTok)
			if err == nil {
				t.Errorf("exchange accepted %q as the worker's credential (aud is gemgate's, not %q)", cred.Token, "gemstone")
			}
		})
	}
}

// What an issuer gives for the backend passes: a JWT whose aud holds the backend's audience
// (alone or with others), or an opaque token, whose audience only the issuer knows.
func TestExchangeTakesTheBackendsToken(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	subject := header + "." + b64([]byte(`{"aud":"https://gemgate.example/mcp","sub":"alice"}`)) + ".c2ln"
	for _, issued := range []string{
		header + "." + b64([]byte(`{"aud":"gemstone","sub":"alice"}`)) + ".c2ln",
		header + "." + b64([]byte(`{"aud":["account","gemstone"],"sub":"alice"}`)) + ".c2ln",
		"opaque-2YotnFZFEjr1zCsicMWpAA",
	} {
		body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, issued)
		srv := tokenEndpoint(t, 200, body, new(map[string]any))
		ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
		if err != nil {
			t.Fatal(err)
		}
		if cred, err := ex.Exchange(t.Context(), subject); err != nil || cred.Token != issued {
			t.Errorf("issued %q: %v, %q; want it handed on", issued, err, cred.Token)
		}
	}
}
