package devissuer

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestTokenRequestShape(t *testing.T) {
	i := startIssuer(t, Options{})
	alice := client(t, i, "alice")
	t.Run("JSON body refused", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, i.URL()+"/token",
			strings.NewReader(`{"grant_type":"client_credentials"}`))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(alice.ID, alice.Secret)
		if r := do(t, req); r.status != 400 || r.body["error"] != "invalid_request" {
			t.Errorf("got %d %v", r.status, r.body)
		}
	})
	t.Run("GET not allowed", func(t *testing.T) {
		res, err := http.Get(i.URL() + "/token?grant_type=client_credentials")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("status %d, want 405", res.StatusCode)
		}
	})
	t.Run("credentials in the query are ignored", func(t *testing.T) {
		q := url.Values{"client_id": {"alice"}, "client_secret": {alice.Secret}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, i.URL()+"/token?"+q.Encode(),
			strings.NewReader("grant_type=client_credentials"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if r := do(t, req); r.status != 401 {
			t.Errorf("got %d %v, want 401", r.status, r.body)
		}
	})
}

func TestScopeOmittedWhenEmpty(t *testing.T) {
	c := Client{ID: "svc", Secret: "s3cret", User: "svc"}
	i := startIssuer(t, Options{Clients: []Client{c}})
	r := post(t, i, url.Values{"grant_type": {"client_credentials"}}, &c)
	if r.status != 200 {
		t.Fatalf("status %d %v", r.status, r.body)
	}
	if _, ok := r.body["scope"]; ok {
		t.Errorf("response has a scope member: %v", r.body)
	}
}

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
