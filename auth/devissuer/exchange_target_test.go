package devissuer

import (
	"testing"
	"time"
)

// TestTokenExchangeAudienceAndResource: audience and resource may both be given when they
// agree; when they disagree the request is refused, even if one of them is an allowed
// audience (the other would otherwise be silently dropped).
func TestTokenExchangeAudienceAndResource(t *testing.T) {
	i := exchangeIssuer(t)
	good, err := i.Mint("alice", []string{"mcp:use"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		kv         []string
		wantStatus int
		wantError  string
		wantAud    string
	}{
		{"both, the same", []string{"resource", "gemstone"}, 200, "", "gemstone"},
		{"resource allowed, audience not", []string{"audience", "https://elsewhere.example", "resource", "gemstone"}, 400, "invalid_target", ""},
		{"audience allowed, resource not", []string{"resource", "https://elsewhere.example"}, 400, "invalid_target", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, i, exchangeForm(good, tt.kv...), &gateway)
			if r.status != tt.wantStatus || (tt.wantError != "" && r.body["error"] != tt.wantError) {
				t.Fatalf("got %d %v, want %d %s", r.status, r.body, tt.wantStatus, tt.wantError)
			}
			if tt.wantAud != "" {
				if aud := payload(t, r.body["access_token"].(string))["aud"]; aud != tt.wantAud {
					t.Errorf("aud = %v, want %s", aud, tt.wantAud)
				}
			}
		})
	}
}

// TestTokenExchangeLifetime: the exchanged token lives min(TokenTTL, what the subject token
// has left), in whole seconds, and a subject token with less than a second left is not
// exchanged at all. The grant is called directly, at instants set on the issuer's clock.
func TestTokenExchangeLifetime(t *testing.T) {
	const ttl = 1500 * time.Millisecond // a fraction, so cutting a second off shows
	i := startIssuer(t, Options{
		Clients:           []Client{gateway},
		ExchangeAudiences: []string{"gemstone"},
		TokenTTL:          ttl,
	})
	minted := time.Unix(1_700_000_000, 0)
	i.now = func() time.Time { return minted }
	subject, err := i.Mint("alice", []string{"mcp:use"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	exp := minted.Add(time.Hour)
	tests := []struct {
		name        string
		at          time.Time
		wantExp     time.Time // zero: refused
		wantExpires int64
	}{
		{"plenty left: TokenTTL", exp.Add(-time.Minute), exp.Add(-time.Minute + ttl).Truncate(time.Second), 1},
		{"exactly TokenTTL left: all of it", exp.Add(-ttl), exp, 1},
		{"one second left", exp.Add(-time.Second), exp, 1},
		{"1.2 s left: one whole second", exp.Add(-1200 * time.Millisecond), exp.Add(-time.Second), 1},
		{"half a second left: refused", exp.Add(-500 * time.Millisecond), time.Time{}, 0},
		{"expired: refused", exp, time.Time{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i.now = func() time.Time { return tt.at }
			resp, terr := i.tokenExchange(gateway, exchangeForm(subject))
			if tt.wantExp.IsZero() {
				if terr == nil || terr.Code != "invalid_grant" {
					t.Fatalf("tokenExchange = %+v, %v; want invalid_grant", resp, terr)
				}
				return
			}
			if terr != nil {
				t.Fatalf("tokenExchange: %v", terr)
			}
			if resp.ExpiresIn != tt.wantExpires {
				t.Errorf("expires_in = %d, want %d", resp.ExpiresIn, tt.wantExpires)
			}
			got := int64(payload(t, resp.AccessToken)["exp"].(float64))
			if got != tt.wantExp.Unix() {
				t.Errorf("exp = %v, want %v (subject's %v)", time.Unix(got, 0), tt.wantExp, exp)
			}
		})
	}
}
