package exchange

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jws"
)

// answerTransport answers every request with a token response handing out token.
type answerTransport struct{ token *string }

func (a answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, *a.token)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// FuzzIssuedTokenForGemgateIsRefused: whatever text the issuer hands back, when a JWT library
// that reads it leniently (jwx: either base64 alphabet, padding, stray bits) finds a payload
// whose aud names gemgate's own audience, the token is a token for gemgate in a worker's
// hands, and the exchange refuses it. Two readers of one field: jwx's and the exchange's.
func FuzzIssuedTokenForGemgateIsRefused(f *testing.F) {
	const gateway = "https://gemgate.example/mcp"
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	payload := b64([]byte(`{"iss":"https://idp","aud":"` + gateway + `","sub":"alice","name":"~~~???>>>"}`))
	tok := header + "." + payload + ".c2lnbmF0dXJl"
	std := strings.NewReplacer("-", "+", "_", "/")
	for _, seed := range []string{
		tok, tok + "=", std.Replace(tok), header + "." + std.Replace(payload) + ".c2lnbmF0dXJl==",
		header + "." + payload[:len(payload)-1] + "B.c2lnbmF0dXJl", // stray bits
		"opaque-2YotnFZFEjr1zCsicMWpAA",
	} {
		f.Add(seed)
	}
	var issued string
	ex, err := New(Config{TokenURL: "https://idp.example/token", ClientID: "gemgate", ClientSecret: "s3cret",
		Audience: "gemstone", GatewayAudiences: []string{gateway},
		HTTPClient: &http.Client{Transport: answerTransport{&issued}}})
	if err != nil {
		f.Fatal(err)
	}
	subject := header + "." + b64([]byte(`{"aud":"`+gateway+`","sub":"alice","jti":"subject"}`)) + ".c2ln"
	f.Fuzz(func(t *testing.T, s string) {
		issued = s
		cred, err := ex.Exchange(t.Context(), subject)
		if err != nil {
			return
		}
		msg, perr := jws.Parse([]byte(cred.Token))
		if perr != nil {
			return
		}
		var claims struct{ Aud any }
		if json.Unmarshal(msg.Payload(), &claims) != nil {
			return
		}
		var aud []string
		switch a := claims.Aud.(type) {
		case string:
			aud = []string{a}
		case []any:
			for _, x := range a {
				if s, ok := x.(string); ok {
					aud = append(aud, s)
				}
			}
		}
		if slices.Contains(aud, gateway) {
			t.Errorf("exchange handed out %q, which jwx reads as a token for gemgate (aud %q)", cred.Token, aud)
		}
	})
}
