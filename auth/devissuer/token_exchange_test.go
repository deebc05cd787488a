package devissuer

import (
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func exchangeIssuer(t *testing.T) *Issuer {
	t.Helper()
	return startIssuer(t, Options{
		Clients:           append(DefaultClients(), gateway),
		ExchangeAudiences: []string{"gemstone"},
	})
}

func TestTokenExchange(t *testing.T) {
	i := exchangeIssuer(t)
	alice := client(t, i, "alice")
	cc := post(t, i, url.Values{"grant_type": {"client_credentials"}}, &alice)
	subject, _ := cc.body["access_token"].(string)
	if subject == "" {
		t.Fatalf("no alice token: %v", cc.body)
	}

	tests := []struct {
		name      string
		form      url.Values
		wantScope string
	}{
		{"keeps the subject's scopes", exchangeForm(subject), "mcp:use mcp:write"},
		{"narrows scope", exchangeForm(subject, "scope", "mcp:use"), "mcp:use"},
		{"with requested_token_type", exchangeForm(subject, "requested_token_type", "urn:ietf:params:oauth:token-type:access_token"), "mcp:use mcp:write"},
		{"resource instead of audience", exchangeForm(subject, "audience", "", "resource", "gemstone"), "mcp:use mcp:write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, i, tt.form, &gateway)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %v", r.status, r.body)
			}
			tok, _ := r.body["access_token"].(string)
			if diff := cmp.Diff(map[string]any{
				"access_token":      tok,
				"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
				"token_type":        "Bearer",
				"expires_in":        r.body["expires_in"],
				"scope":             tt.wantScope,
			}, r.body); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if e, _ := r.body["expires_in"].(float64); e <= 0 || e > 3600 {
				t.Errorf("expires_in = %v", r.body["expires_in"])
			}
			claims := verifyWithJWKS(t, i, tok, "gemstone")
			raw := payload(t, tok)
			if diff := cmp.Diff(map[string]any{
				"aud": "gemstone", "sub": "alice", "preferred_username": "alice",
				"azp": "gemgate", "act": map[string]any{"sub": "gemgate"}, "scope": tt.wantScope,
			}, map[string]any{
				"aud": raw["aud"], "sub": claims["sub"], "preferred_username": claims["preferred_username"],
				"azp": claims["azp"], "act": raw["act"], "scope": claims["scope"],
			}); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTokenExchangeNeverOutlivesSubject(t *testing.T) {
	i := exchangeIssuer(t)
	subject, err := i.Mint("alice", []string{"mcp:use"}, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := post(t, i, exchangeForm(subject), &gateway)
	if r.status != 200 {
		t.Fatalf("status %d %v", r.status, r.body)
	}
	if e := r.body["expires_in"].(float64); e > 90 {
		t.Errorf("expires_in = %v, beyond the subject token's 90 s", e)
	}
	if got, want := payload(t, r.body["access_token"].(string))["exp"], payload(t, subject)["exp"]; got.(float64) > want.(float64) {
		t.Errorf("exp %v after the subject's %v", got, want)
	}
}

func TestTokenExchangeRefusals(t *testing.T) {
	i := exchangeIssuer(t)
	good, err := i.Mint("alice", []string{"mcp:use"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := i.Mint("alice", []string{"mcp:use"}, -time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other := startIssuer(t, Options{})
	foreign, err := other.Mint("alice", []string{"mcp:use"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret := gateway
	wrongSecret.Secret = "wrong"

	tests := []struct {
		name       string
		basic      *Client
		form       url.Values
		wantStatus int
		wantError  string
	}{
		{"garbage subject token", &gateway, exchangeForm("not-a-jwt"), 400, "invalid_grant"},
		{"tampered subject token", &gateway, exchangeForm(good[:len(good)-4] + "AAAA"), 400, "invalid_grant"},
		{"expired subject token", &gateway, exchangeForm(expired), 400, "invalid_grant"},
		{"another issuer's token", &gateway, exchangeForm(foreign), 400, "invalid_grant"},
		{"audience not allowed", &gateway, exchangeForm(good, "audience", "https://elsewhere.example"), 400, "invalid_target"},
		{"audience and resource disagree", &gateway, exchangeForm(good, "resource", "other"), 400, "invalid_target"},
		{"no audience", &gateway, exchangeForm(good, "audience", ""), 400, "invalid_request"},
		{"no subject token", &gateway, exchangeForm("", "subject_token", ""), 400, "invalid_request"},
		{"no subject_token_type", &gateway, exchangeForm(good, "subject_token_type", ""), 400, "invalid_request"},
		{"refresh token type", &gateway, exchangeForm(good, "subject_token_type", "urn:ietf:params:oauth:token-type:refresh_token"), 400, "invalid_request"},
		{"id token requested", &gateway, exchangeForm(good, "requested_token_type", "urn:ietf:params:oauth:token-type:id_token"), 400, "invalid_request"},
		{"scope beyond the subject's", &gateway, exchangeForm(good, "scope", "mcp:write"), 400, "invalid_scope"},
		{"unauthenticated client", nil, exchangeForm(good), 401, "invalid_client"},
		{"wrong client secret", &wrongSecret, exchangeForm(good), 401, "invalid_client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, i, tt.form, tt.basic)
			if r.status != tt.wantStatus || r.body["error"] != tt.wantError {
				t.Fatalf("got %d %v, want %d %s", r.status, r.body, tt.wantStatus, tt.wantError)
			}
			if _, ok := r.body["access_token"]; ok {
				t.Error("refusal carries an access_token")
			}
		})
	}
}

func TestTokenExchangeDisabledWithoutAudiences(t *testing.T) {
	i := startIssuer(t, Options{Clients: []Client{gateway}})
	subject, err := i.Mint("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, i, exchangeForm(subject), &gateway); r.status != 400 || r.body["error"] != "invalid_target" {
		t.Errorf("got %d %v, want invalid_target", r.status, r.body)
	}
}

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

// TestTokenExchangeLifetime: the exchanged token lives min(an hour, what the subject token
// has left), in whole seconds, and a subject token with less than a second left is not
// exchanged at all. The grant is called directly, each instant in a testing/synctest bubble,
// whose clock starts at one fixed instant, when the subject token is minted.
func TestTokenExchangeLifetime(t *testing.T) {
	i := startIssuer(t, Options{
		Clients:           []Client{gateway},
		ExchangeAudiences: []string{"gemstone"},
	})
	var subject string
	var minted time.Time
	synctest.Test(t, func(t *testing.T) {
		var err error
		if subject, err = i.Mint("alice", []string{"mcp:use"}, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		minted = time.Now()
	})
	exp := minted.Add(2 * time.Hour)
	tests := []struct {
		name        string
		at          time.Time
		wantExp     time.Time // zero: refused
		wantExpires int64
	}{
		// A fraction of a second past the mint, so that cutting it off shows.
		{"plenty left: an hour", minted.Add(500 * time.Millisecond), minted.Add(time.Hour), 3600},
		{"exactly an hour left: all of it", exp.Add(-time.Hour), exp, 3600},
		{"one second left", exp.Add(-time.Second), exp, 1},
		{"1.2 s left: one whole second", exp.Add(-1200 * time.Millisecond), exp.Add(-time.Second), 1},
		{"half a second left: refused", exp.Add(-500 * time.Millisecond), time.Time{}, 0},
		{"expired: refused", exp, time.Time{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(tt.at.Sub(minted))
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
		})
	}
}

// TestTokenExchangeRefusesAnotherIssuersName: a subject token signed with this issuer's very
// key, under its key id, but naming another issuer is not this issuer's, and is not
// exchanged. The other issuer is a second dev issuer started on the same key file: same
// key, same kid, another URL, so only the iss check tells its tokens apart.
func TestTokenExchangeRefusesAnotherIssuersName(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key.pem")
	i := startIssuer(t, Options{
		KeyFile:           file,
		Clients:           append(DefaultClients(), gateway),
		ExchangeAudiences: []string{"gemstone"},
	})
	twin := startIssuer(t, Options{KeyFile: file})
	if twin.key.kid != i.key.kid || !twin.key.private.Equal(i.key.private) || twin.URL() == i.URL() {
		t.Fatalf("want the same key under the same kid at another URL: kids %s %s, URLs %s %s", i.key.kid, twin.key.kid, i.URL(), twin.URL())
	}
	own, err := i.Mint("alice", []string{"mcp:use"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := twin.Mint("alice", []string{"mcp:use"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if iss := payload(t, foreign)["iss"]; iss != twin.URL() {
		t.Fatalf("the twin's token names iss %v, want %s", iss, twin.URL())
	}

	if _, err := i.verifyOwn(own); err != nil {
		t.Errorf("verifyOwn(own token) = %v", err)
	}
	if c, err := i.verifyOwn(foreign); err != errForeignToken {
		t.Errorf("verifyOwn(token naming %s) = %+v, %v; want errForeignToken", twin.URL(), c, err)
	}
	if r := post(t, i, exchangeForm(own), &gateway); r.status != http.StatusOK {
		t.Errorf("exchanging its own token: status %d %v", r.status, r.body)
	}
	r := post(t, i, exchangeForm(foreign), &gateway)
	if diff := cmp.Diff(map[string]any{"error": "invalid_grant", "error_description": "subject_token is invalid or expired"}, r.body); r.status != http.StatusBadRequest || diff != "" {
		t.Errorf("exchanging a token naming %s: status %d, want 400; body (-want +got):\n%s", twin.URL(), r.status, diff)
	}
}
