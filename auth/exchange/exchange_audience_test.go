package exchange

import (
	"encoding/base64"
	"fmt"
	"testing"
)

// jwtAudience reads the issued token's payload with encoding/json into a struct field tagged
// "aud", which matches member names case-insensitively, the last one winning. A payload
// {"aud":"<gemgate's audience>","Aud":"gemstone"} is "for gemstone" to the check, and "for
// gemgate" to gemgate's own verifier (its claim set reads "aud" in its exact case, as RFC 7519
// asks) and to every JWT library: the fresh gemgate token the check was added to refuse
// reaches the worker. The check must read "aud" exactly as gemgate's verifier reads it.
func TestExchangeAudienceReadInExactCase(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	subject := header + "." + b64([]byte(`{"aud":"https://gemgate.example/mcp","sub":"alice","jti":"1"}`)) + ".c2ln"
	for _, payload := range []string{
		`{"iss":"https://idp","aud":"https://gemgate.example/mcp","Aud":"gemstone","sub":"alice","jti":"2"}`,
		`{"iss":"https://idp","aud":"https://gemgate.example/mcp","AUD":["gemstone"],"sub":"alice","jti":"2"}`,
	} {
		issued := header + "." + b64([]byte(payload)) + ".c2ln"
		body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, issued)
		srv := tokenEndpoint(t, 200, body, new(map[string]any))
		ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ex.Exchange(t.Context(), subject); err == nil {
			t.Errorf("issued token with payload %s (aud is gemgate's; only a differently-cased member names gemstone) handed to the worker", payload)
		}
	}
}

// The audience check asks only that aud contain cfg.Audience. An issuer that adds the
// requested audience to the audiences the token would carry anyway (Keycloak's legacy token
// exchange, or an audience mapper in a default client scope that names gemgate) returns a
// token whose aud is ["https://gemgate.example/mcp","gemstone"]: a token gemgate itself
// accepts, handed to the worker, the pass-through the check was added to stop. The caller's
// own audiences (Config.GatewayAudiences: its public URL and audiences setting) must not be in
// the issued token's aud.
func TestExchangeRefusesATokenAlsoForTheCallersAudience(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	subject := header + "." + b64([]byte(`{"aud":"https://gemgate.example/mcp","sub":"alice","jti":"1"}`)) + ".c2ln"
	issued := header + "." + b64([]byte(`{"iss":"https://idp","aud":["https://gemgate.example/mcp","gemstone"],"sub":"alice","jti":"2"}`)) + ".c2ln"
	body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, issued)
	srv := tokenEndpoint(t, 200, body, new(map[string]any))
	ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone",
		GatewayAudiences: []string{"https://gemgate.example/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Exchange(t.Context(), subject); err == nil {
		t.Error("issued token with aud [gemgate's audience, gemstone] (valid at gemgate too) handed to the worker")
	}
}
