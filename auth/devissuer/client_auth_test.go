package devissuer

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestClientAuthenticationForms: client_secret_basic with the id and secret form-encoded
// first (RFC 6749 §2.3.1), a client_id in the body that repeats the Basic one, and the
// refusal of a body client_id that names someone else.
func TestClientAuthenticationForms(t *testing.T) {
	odd := Client{ID: "svc:a b", Secret: "p@ss:w+rd/é", User: "svc", Scopes: []string{"mcp:use"}}
	rawPercent := Client{ID: "pct", Secret: "100%", User: "pct", Scopes: []string{"mcp:use"}}
	i := startIssuer(t, Options{Clients: append(DefaultClients(), odd, rawPercent)})
	alice := client(t, i, "alice")
	cc := func(kv ...string) url.Values {
		v := url.Values{"grant_type": {"client_credentials"}}
		for n := 0; n+1 < len(kv); n += 2 {
			v.Add(kv[n], kv[n+1])
		}
		return v
	}
	basic := func(id, secret string, form url.Values) reply {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, i.URL()+"/token", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, secret)
		return do(t, req)
	}
	tests := []struct {
		name       string
		r          reply
		wantStatus int
		wantError  string
	}{
		{"basic, form-encoded id and secret", basic(url.QueryEscape(odd.ID), url.QueryEscape(odd.Secret), cc()), 200, ""},
		{"basic, a secret that is not an escape is taken as sent", basic("pct", "100%", cc()), 200, ""},
		{"basic, the body repeats the same client_id", basic("alice", alice.Secret, cc("client_id", "alice")), 200, ""},
		{"basic, the body names another client", basic("alice", alice.Secret, cc("client_id", "bob")), 400, "invalid_request"},
		{"basic, the escaped id compared decoded", basic(url.QueryEscape(odd.ID), url.QueryEscape(odd.Secret), cc("client_id", odd.ID)), 200, ""},
		{"basic, the id not decoded is not the client", basic(odd.ID+"%", url.QueryEscape(odd.Secret), cc()), 401, "invalid_client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.r.status != tt.wantStatus {
				t.Fatalf("status %d %v, want %d", tt.r.status, tt.r.body, tt.wantStatus)
			}
			if tt.wantError != "" && tt.r.body["error"] != tt.wantError {
				t.Errorf("error %v, want %s", tt.r.body["error"], tt.wantError)
			}
			if _, ok := tt.r.body["access_token"]; ok != (tt.wantStatus == 200) {
				t.Errorf("access_token present = %v with status %d", ok, tt.r.status)
			}
		})
	}
}
