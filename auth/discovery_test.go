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
	got, err := TokenEndpoint(context.Background(), nil, issuer)
	if err != nil || got != issuer+"/token" {
		t.Fatalf("TokenEndpoint = %q, %v", got, err)
	}
	// A document naming another issuer is refused, as for the keys.
	docIssuer = func() string { return "https://elsewhere.example" }
	if _, err := TokenEndpoint(context.Background(), nil, issuer); err == nil {
		t.Error("a discovery document for another issuer was accepted")
	}
}
