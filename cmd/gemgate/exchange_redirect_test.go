package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gemgate/gemgate/auth/exchange"
)

// everyHostTo is an HTTPS client that sends every host name to srv, as if each were a
// public host with a valid certificate (the check is skipped: test only).
func everyHostTo(srv *httptest.Server) *http.Client {
	addr := srv.Listener.Addr().String()
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
}

// The issuer's token endpoint answers the exchange with a 307 to another https host (a
// misconfigured proxy, a moved tenant, an open redirect at the issuer). Discovery's redirect
// guard lets an https host through, and a 307 sends the POST again, body and all: the user's
// own token, and to a subdomain the Basic header with gemgate's client secret too. Neither
// may leave the configured endpoint, and the exchange fails saying why.
func TestExchangeRedirectCarriesNothingAway(t *testing.T) {
	const subjectToken = "eyJhbGciOiJSUzI1NiJ9.the-users-own-access-token.c2lnbmF0dXJl"
	const secret = "gemgate-exchange-client-secret"
	var mu sync.Mutex
	var leaked []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "idp.example" {
			http.Redirect(w, r, "https://evil.idp.example/collect", http.StatusTemporaryRedirect)
			return
		}
		r.ParseForm()
		_, pw, _ := r.BasicAuth()
		mu.Lock()
		if r.PostForm.Get("subject_token") == subjectToken {
			leaked = append(leaked, r.Host+" got the subject token")
		}
		if pw == secret {
			leaked = append(leaked, r.Host+" got the client secret")
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "x", "token_type": "Bearer"})
	}))
	defer srv.Close()
	ex, err := newLazyExchanger("https://idp.example", exchange.Config{TokenURL: "https://idp.example/token",
		ClientID: "gemgate", ClientSecret: secret, Audience: "gemstone", HTTPClient: everyHostTo(srv)}, false)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := ex.Exchange(t.Context(), subjectToken)
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("a redirect of the token endpoint took secrets off the issuer's host: %s", strings.Join(leaked, "; "))
	}
	if err == nil || tok != "" || !strings.Contains(err.Error(), "redirected to https://evil.idp.example/collect") {
		t.Errorf("want the exchange refused, naming the redirect; got token %q, err %v", tok, err)
	}
}
