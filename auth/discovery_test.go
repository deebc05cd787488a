package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestTokenEndpointFromDiscovery(t *testing.T) {
	var issuer string
	docIssuer := func() string { return issuer }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": docIssuer(), "jwks_uri": issuer + "/jwks", "token_endpoint": issuer + "/token",
			"authorization_endpoint": issuer + "/authorize",
		})
	}))
	defer srv.Close()
	issuer = srv.URL
	got, err := TokenEndpoint(context.Background(), nil, issuer, false)
	if err != nil || got != issuer+"/token" {
		t.Fatalf("TokenEndpoint = %q, %v", got, err)
	}
	// A document naming another issuer is refused, as for the keys.
	docIssuer = func() string { return "https://elsewhere.example" }
	if _, err := TokenEndpoint(context.Background(), nil, issuer, false); err == nil {
		t.Error("a discovery document for another issuer was accepted")
	}
}

// SecureURL is the one rule for every URL gemgate takes keys from or sends secrets to.
func TestSecureURL(t *testing.T) {
	for _, tc := range []struct {
		url           string
		allowInsecure bool
		want          bool
	}{
		{"https://id.example/realms/t", false, true},
		{"http://127.0.0.1:8080/certs", false, true},
		{"http://localhost/certs", false, true},
		{"http://[::1]:8080/certs", false, true},
		{"http://id.example/certs", false, false},
		{"http://id.example/certs", true, true},
		{"HTTP://id.example/certs", false, false},
		{"http://127.0.0.1.nip.io/certs", false, false},
		{"http://user@127.0.0.1@id.example/certs", false, false},
		{"ftp://127.0.0.1/certs", true, false},
		{"https:///no-host", false, false},
		{"/relative", true, false},
	} {
		if got := SecureURL(tc.url, tc.allowInsecure); got != tc.want {
			t.Errorf("SecureURL(%q, %v) = %v, want %v", tc.url, tc.allowInsecure, got, tc.want)
		}
	}
}
