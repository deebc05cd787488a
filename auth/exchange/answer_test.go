package exchange

import (
	"strings"
	"testing"
	"time"
)

// An issuer's answer whose expires_in is zero or less names a credential already expired (or
// none): gemgate would hand the worker a dead token and, with on_token_expiry restart or end,
// restart or end the worker at every request. RFC 6749 §5.1 and RFC 8693 §2.2.1 also require
// token_type, and RFC 8693 a string issued_token_type: an answer without token_type says
// nothing of a bearer token, and an issued_token_type that is not a string cannot be the one
// requested. Each is refused, with nothing of the tokens in the error.
func TestExchangeRefusesAnAnswerItCannotUse(t *testing.T) {
	const issued = "backend-token"
	for _, tc := range []struct{ name, body, want string }{
		{"expires_in negative", `{"access_token":"backend-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":-3600}`, "expires_in"},
		{"expires_in negative as a string", `{"access_token":"backend-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":"-1"}`, "expires_in"},
		{"no token_type", `{"access_token":"backend-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","expires_in":300}`, "token_type"},
		{"issued_token_type not a string", `{"access_token":"backend-token","issued_token_type":["urn:ietf:params:oauth:token-type:id_token"],"token_type":"Bearer","expires_in":300}`, "issued_token_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen map[string]any
			srv := tokenEndpoint(t, 200, tc.body, &seen)
			ex, err := New(Config{TokenURL: srv.URL, ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			cred, err := ex.Exchange(t.Context(), subject)
			if err == nil {
				t.Fatalf("Exchange took the answer: %v (expired %v ago)", cred, time.Since(cred.Expiry).Round(time.Second))
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, issued) || strings.Contains(msg, subject) {
				t.Errorf("error %q: want it to name %s and no token", msg, tc.want)
			}
		})
	}
}
