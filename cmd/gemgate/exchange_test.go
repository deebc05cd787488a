package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/gemgate/gemgate/auth/exchange"
)

// With worker_credential=exchange and no exchange_token_url, gemgate must start while the
// issuer is down: the token endpoint is found on first use, and a failed look-up is retried.
func TestLazyExchangerFindsTheEndpointOnceTheIssuerIsUp(t *testing.T) {
	var up atomic.Bool
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks",
				"token_endpoint": srv.URL + "/token", "authorization_endpoint": srv.URL + "/authorize",
				"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
				"id_token_signing_alg_values_supported": []string{"RS256"}})
		case "/token":
			json.NewEncoder(w).Encode(map[string]any{"access_token": "backend-token", "token_type": "Bearer",
				"issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "expires_in": 60})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	ex, err := newLazyExchanger(srv.URL, exchange.Config{ClientID: "gemgate", ClientSecret: "s", Audience: "backend"}, false)
	if err != nil {
		t.Fatalf("building the exchanger while the issuer is down: %v", err)
	}
	ctx := context.Background()
	if _, _, err := ex.Exchange(ctx, "subject-token"); err == nil {
		t.Fatal("an exchange while the issuer is down succeeded")
	}
	up.Store(true)
	tok, expiry, err := ex.Exchange(ctx, "subject-token")
	if err != nil || tok != "backend-token" || expiry.IsZero() {
		t.Fatalf("exchange once the issuer is up: %q %v %v", tok, expiry, err)
	}
}

func TestLazyExchangerChecksAGivenEndpointAtStart(t *testing.T) {
	if _, err := newLazyExchanger("https://issuer.example", exchange.Config{TokenURL: "not a url", ClientID: "g",
		ClientSecret: "s", Audience: "b"}, false); err == nil {
		t.Fatal("a malformed exchange_token_url was accepted")
	}
}
