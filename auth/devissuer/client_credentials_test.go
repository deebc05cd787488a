package devissuer

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClientCredentials(t *testing.T) {
	i := startIssuer(t, Options{})
	alice, bob := client(t, i, "alice"), client(t, i, "bob")
	tests := []struct {
		name      string
		c         Client
		post      bool // client_secret_post instead of Basic
		form      url.Values
		wantScope string
	}{
		{"alice gets all her scopes", alice, false, url.Values{}, "mcp:use mcp:write"},
		{"alice narrows to mcp:use", alice, false, url.Values{"scope": {"mcp:use"}}, "mcp:use"},
		{"bob gets mcp:use", bob, false, url.Values{}, "mcp:use"},
		{"bob asks for more, gets the intersection", bob, false, url.Values{"scope": {"mcp:use mcp:write"}}, "mcp:use"},
		{"client_secret_post", bob, true, url.Values{}, "mcp:use"},
		{"matching resource", alice, false, url.Values{"resource": {testAudience}, "scope": {"mcp:write"}}, "mcp:write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := url.Values{"grant_type": {"client_credentials"}}
			for k, v := range tt.form {
				form[k] = v
			}
			basic := &tt.c
			if tt.post {
				form.Set("client_id", tt.c.ID)
				form.Set("client_secret", tt.c.Secret)
				basic = nil
			}
			r := post(t, i, form, basic)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %v", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if cc := r.header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q", cc)
			}
			tok, _ := r.body["access_token"].(string)
			if diff := cmp.Diff(map[string]any{
				"access_token": tok, "token_type": "Bearer", "expires_in": float64(3600), "scope": tt.wantScope,
			}, r.body); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}

			claims := verifyWithJWKS(t, i, tok, testAudience)
			if claims["sub"] != tt.c.User || claims["preferred_username"] != tt.c.User ||
				claims["scope"] != tt.wantScope || claims["azp"] != tt.c.ID || claims["jti"] == "" {
				t.Errorf("claims = %v", claims)
			}
			raw := payload(t, tok)
			if raw["aud"] != testAudience {
				t.Errorf("aud = %#v, want the string %q", raw["aud"], testAudience)
			}
			if exp, iat := raw["exp"].(float64), raw["iat"].(float64); exp-iat != 3600 || raw["nbf"] != raw["iat"] {
				t.Errorf("iat %v nbf %v exp %v", raw["iat"], raw["nbf"], raw["exp"])
			}
		})
	}
}

func TestClientCredentialsRefusals(t *testing.T) {
	i := startIssuer(t, Options{})
	alice, bob := client(t, i, "alice"), client(t, i, "bob")
	wrong := alice
	wrong.Secret = "not-" + alice.Secret
	unknown := Client{ID: "mallory", Secret: alice.Secret}
	cc := func(kv ...string) url.Values {
		v := url.Values{"grant_type": {"client_credentials"}}
		for n := 0; n+1 < len(kv); n += 2 {
			v.Add(kv[n], kv[n+1])
		}
		return v
	}
	tests := []struct {
		name       string
		basic      *Client
		form       url.Values
		wantStatus int
		wantError  string
	}{
		{"bad secret", &wrong, cc(), 401, "invalid_client"},
		{"unknown client", &unknown, cc(), 401, "invalid_client"},
		{"bad secret by post", nil, cc("client_id", "alice", "client_secret", "nope"), 401, "invalid_client"},
		{"no client authentication", nil, cc(), 401, "invalid_client"},
		{"client id without secret", nil, cc("client_id", "alice"), 401, "invalid_client"},
		{"two authentication methods", &alice, cc("client_id", "alice", "client_secret", alice.Secret), 400, "invalid_request"},
		{"resource mismatch", &alice, cc("resource", "https://elsewhere.example/mcp"), 400, "invalid_target"},
		{"two resources", &alice, cc("resource", testAudience, "resource", "https://elsewhere.example/mcp"), 400, "invalid_target"},
		{"scope outside the client's", &bob, cc("scope", "mcp:write"), 400, "invalid_scope"},
		{"unknown scope", &alice, cc("scope", "admin"), 400, "invalid_scope"},
		{"repeated parameter", &alice, cc("scope", "mcp:use", "scope", "mcp:write"), 400, "invalid_request"},
		{"no grant type", &alice, url.Values{}, 400, "invalid_request"},
		{"unsupported grant type", &alice, url.Values{"grant_type": {"password"}}, 400, "unsupported_grant_type"},
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
			if tt.wantStatus == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("401 without a Basic challenge: %q", r.header.Get("WWW-Authenticate"))
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}
