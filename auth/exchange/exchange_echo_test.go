package exchange

import (
	"fmt"
	"testing"
)

// TestExchangeRefusesTheSubjectTokenBack: a token endpoint that answers a token exchange
// with the very token it was sent (an IdP or proxy that ignores the audience, a misrouted
// exchange_token_url answering with an echo) makes `worker_credential: exchange` into
// `passthrough` without the startup warning: the user's own access token, valid at gemgate
// and at every resource that accepts it, lands in a worker, which the threat model does not
// trust and the MCP specification forbids. The issued token must be another token.
func TestExchangeRefusesTheSubjectTokenBack(t *testing.T) {
	var seen map[string]any
	body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, subject)
	srv := tokenEndpoint(t, 200, body, &seen)
	ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := ex.Exchange(t.Context(), subject)
	if err == nil && cred.Token == subject {
		t.Error("the exchange handed back the caller's own access token as the worker's credential")
	}
}
