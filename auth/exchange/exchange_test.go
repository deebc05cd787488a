package exchange

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/auth/devissuer"
	"github.com/google/go-cmp/cmp"
)

const subject = "eyJhbGciOiJSUzI1NiJ9.user-token.sig"

// tokenEndpoint is an httptest token endpoint that records the request and answers
// with status and body.
func tokenEndpoint(t *testing.T, status int, body string, seen *map[string]any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("ParseForm: %v", err)
		}
		id, secret, basic := r.BasicAuth()
		got := map[string]any{
			"method":       r.Method,
			"content-type": r.Header.Get("Content-Type"),
			"basic":        basic,
			"client_id":    id,
			"secret":       secret,
			"query":        r.URL.RawQuery,
		}
		for k, v := range r.PostForm {
			got["form:"+k] = strings.Join(v, ",")
		}
		*seen = got
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestExchangeRequestShape(t *testing.T) {
	var seen map[string]any
	srv := tokenEndpoint(t, 200, `{"access_token":"backend-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, &seen)
	ex, err := New(Config{
		TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret",
		Audience: "gemstone",
	})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	cred, err := ex.Exchange(t.Context(), subject)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"method":                    "POST",
		"content-type":              "application/x-www-form-urlencoded",
		"basic":                     true,
		"client_id":                 "gemgate",
		"secret":                    "s3cret",
		"query":                     "",
		"form:grant_type":           "urn:ietf:params:oauth:grant-type:token-exchange",
		"form:subject_token":        subject,
		"form:subject_token_type":   "urn:ietf:params:oauth:token-type:access_token",
		"form:requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"form:audience":             "gemstone",
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if cred.Token != "backend-token" {
		t.Errorf("Token = %q", cred.Token)
	}
	if d := cred.Expiry.Sub(before); d < 299*time.Second || d > 301*time.Second+time.Since(before) {
		t.Errorf("Expiry %v from now, want about 300s", d)
	}
}

func TestExchangeRefusals(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		refusal   bool   // the error is an *Error from the endpoint
		wantCode  string // its Code
		wantInErr string
	}{
		{"invalid_grant", 400, `{"error":"invalid_grant","error_description":"subject token expired"}`, true, "invalid_grant", "subject token expired"},
		{"invalid_client", 401, `{"error":"invalid_client"}`, true, "invalid_client", "invalid_client"},
		{"description echoes the subject token", 400, `{"error":"invalid_grant","error_description":"bad token ` + subject + `"}`, true, "invalid_grant", "[redacted]"},
		{"non-JSON error body echoing the token", 500, `oops ` + subject, true, "", "HTTP 500"},
		{"wrong issued_token_type", 200, `{"access_token":"backend-token","issued_token_type":"urn:ietf:params:oauth:token-type:id_token","token_type":"N_A"}`, false, "", "issued_token_type"},
		{"not a bearer token", 200, `{"access_token":"backend-token","token_type":"DPoP"}`, false, "", "token_type"},
		{"no access token", 200, `{"token_type":"Bearer"}`, false, "", "access_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen map[string]any
			srv := tokenEndpoint(t, tt.status, tt.body, &seen)
			ex, err := New(Config{TokenURL: srv.URL, ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			cred, err := ex.Exchange(t.Context(), subject)
			if err == nil {
				t.Fatalf("Exchange succeeded: %v", cred)
			}
			msg := err.Error()
			for _, secret := range []string{subject, "backend-token", "s3cret"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q contains a secret", msg)
				}
			}
			if !strings.Contains(msg, tt.wantInErr) {
				t.Errorf("error %q lacks %q", msg, tt.wantInErr)
			}
			var ee *Error
			if got := errors.As(err, &ee); got != tt.refusal {
				t.Fatalf("errors.As(*Error) = %v for %q", got, msg)
			}
			if ee != nil && (ee.Code != tt.wantCode || ee.StatusCode != tt.status) {
				t.Errorf("Error = %+v, want code %q status %d", ee, tt.wantCode, tt.status)
			}
		})
	}
}

func TestExchangeUsesHTTPClientAndContext(t *testing.T) {
	var seen map[string]any
	srv := tokenEndpoint(t, 200, `{"access_token":"backend-token","token_type":"Bearer"}`, &seen)
	var calls atomic.Int32
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	ex, err := New(Config{TokenURL: srv.URL, ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := ex.Exchange(t.Context(), subject)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("HTTPClient used %d times, want 1", calls.Load())
	}
	if !cred.Expiry.IsZero() {
		t.Errorf("Expiry = %v without expires_in, want zero", cred.Expiry)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ex.Exchange(ctx, subject); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := ex.Exchange(t.Context(), ""); err == nil {
		t.Error("empty subject token accepted")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewValidates(t *testing.T) {
	good := Config{TokenURL: "https://idp.example/token", ClientID: "gemgate", ClientSecret: "s", Audience: "gemstone"}
	tests := []struct {
		name string
		edit func(*Config)
		want []string // substrings of the error; nil means valid
	}{
		{"valid", func(*Config) {}, nil},
		{"valid loopback http", func(c *Config) { c.TokenURL = "http://127.0.0.1:8081/token" }, nil},
		{"empty", func(c *Config) { *c = Config{} }, []string{"TokenURL is required", "ClientID", "ClientSecret", "audience is required"}},
		{"relative URL", func(c *Config) { c.TokenURL = "/token" }, []string{"not an absolute http(s) URL"}},
		{"other scheme", func(c *Config) { c.TokenURL = "ftp://idp.example/token" }, []string{"not an absolute http(s) URL"}},
		{"user info", func(c *Config) { c.TokenURL = "https://u:p@idp.example/token" }, []string{"user info"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.edit(&c)
			_, err := New(c)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCredentialPrintsNoToken(t *testing.T) {
	c := Credential{Token: "backend-token", Expiry: time.Unix(1700000000, 0)}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "cred", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), buf.String()} {
		if strings.Contains(s, "backend-token") {
			t.Errorf("printed token: %s", s)
		}
	}
}

func TestExchangeAgainstDevIssuer(t *testing.T) {
	gw := devissuer.Client{ID: "gemgate", Secret: "gateway-secret", User: "gemgate"}
	iss, err := devissuer.Start(devissuer.Options{
		Audience:          "http://127.0.0.1:8080/mcp",
		Clients:           append(devissuer.DefaultClients(), gw),
		ExchangeAudiences: []string{"gemstone"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iss.Close() })
	aliceToken, err := iss.Mint("alice", []string{"mcp:use", "mcp:write"}, 0)
	if err != nil {
		t.Fatal(err)
	}

	ex, err := New(Config{TokenURL: iss.URL() + "/token", ClientID: gw.ID, ClientSecret: gw.Secret, Audience: "gemstone"})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := ex.Exchange(t.Context(), aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	if cred.Token == aliceToken || time.Until(cred.Expiry) <= 0 {
		t.Fatalf("credential: same token %v, expiry %v", cred.Token == aliceToken, cred.Expiry)
	}
	claims := jwtClaims(t, cred.Token)
	if diff := cmp.Diff(map[string]any{"aud": "gemstone", "sub": "alice", "iss": iss.URL()},
		map[string]any{"aud": claims["aud"], "sub": claims["sub"], "iss": claims["iss"]}); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}

	// The issuer refuses an audience it does not exchange for, and a wrong secret.
	other, err := New(Config{TokenURL: iss.URL() + "/token", ClientID: gw.ID, ClientSecret: gw.Secret, Audience: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	var ee *Error
	if _, err := other.Exchange(t.Context(), aliceToken); !errors.As(err, &ee) || ee.Code != "invalid_target" {
		t.Errorf("unknown audience: err = %v, want invalid_target", err)
	}
	bad, err := New(Config{TokenURL: iss.URL() + "/token", ClientID: gw.ID, ClientSecret: "wrong", Audience: "gemstone"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Exchange(t.Context(), aliceToken); !errors.As(err, &ee) || ee.Code != "invalid_client" || ee.StatusCode != 401 {
		t.Errorf("wrong secret: err = %v, want 401 invalid_client", err)
	}
}

// jwtClaims decodes a JWT's claims without verification; devissuer's own tests verify
// signatures, here only the exchanged identity matters.
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT (%d parts)", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// jwtAudience reads the issued token's payload with encoding/json into a struct field tagged
// "aud", which matches member names case-insensitively, the last one winning. A payload
// {"aud":"<gemgate's audience>","Aud":"gemstone"} is "for gemstone" to the check, and "for
// gemgate" to gemgate's own verifier (its claim set reads "aud" in its exact case, as RFC 7519
// asks) and to every JWT library: the fresh gemgate token the check was added to refuse
// reaches the worker. The check must read "aud" exactly as gemgate's verifier reads it.
func TestExchangeAudienceReadInExactCase(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	subject := header + "." + b64([]byte(`{"aud":"https://gemgate.example/mcp","sub":"alice","jti":"1"}`)) + ".c2ln"
	for _, payload := range []string{
		`{"iss":"https://idp","aud":"https://gemgate.example/mcp","Aud":"gemstone","sub":"alice","jti":"2"}`,
		`{"iss":"https://idp","aud":"https://gemgate.example/mcp","AUD":["gemstone"],"sub":"alice","jti":"2"}`,
	} {
		issued := header + "." + b64([]byte(payload)) + ".c2ln"
		body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, issued)
		srv := tokenEndpoint(t, 200, body, new(map[string]any))
		ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ex.Exchange(t.Context(), subject); err == nil {
			t.Errorf("issued token with payload %s (aud is gemgate's; only a differently-cased member names gemstone) handed to the worker", payload)
		}
	}
}

// The audience check asks only that aud contain cfg.Audience. An issuer that adds the
// requested audience to the audiences the token would carry anyway (Keycloak's legacy token
// exchange, or an audience mapper in a default client scope that names gemgate) returns a
// token whose aud is ["https://gemgate.example/mcp","gemstone"]: a token gemgate itself
// accepts, handed to the worker, the pass-through the check was added to stop. The caller's
// own audiences (Config.GatewayAudiences: its public URL and audiences setting) must not be in
// the issued token's aud.
func TestExchangeRefusesATokenAlsoForTheCallersAudience(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	subject := header + "." + b64([]byte(`{"aud":"https://gemgate.example/mcp","sub":"alice","jti":"1"}`)) + ".c2ln"
	issued := header + "." + b64([]byte(`{"iss":"https://idp","aud":["https://gemgate.example/mcp","gemstone"],"sub":"alice","jti":"2"}`)) + ".c2ln"
	body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, issued)
	srv := tokenEndpoint(t, 200, body, new(map[string]any))
	ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone",
		GatewayAudiences: []string{"https://gemgate.example/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Exchange(t.Context(), subject); err == nil {
		t.Error("issued token with aud [gemgate's audience, gemstone] (valid at gemgate too) handed to the worker")
	}
}

// The echo check once compares the issued token with the subject token byte for byte, so an
// issuer (or a token URL that is not the issuer's) that hands back the caller's own token with
// one byte of difference, or a fresh token minted for gemgate's own audience rather than the
// backend's, still makes `exchange` a pass-through of a token gemgate accepts. The issued
// token must not be the subject token in any spelling a bearer reader takes for it (HTTP
// trims the spaces around a header value), and a JWT issued for the caller's audience and not
// for cfg.Audience is not a credential for the backend.
func TestExchangeRefusesTheSubjectTokenInDisguise(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	userTok := header + "." + b64([]byte(`{"iss":"https://idp","aud":"https://gemgate.example/mcp","sub":"alice","jti":"1"}`)) + ".c2ln"
	fresh := header + "." + b64([]byte(`{"iss":"https://idp","aud":"https://gemgate.example/mcp","sub":"alice","jti":"2"}`)) + ".c2ln"
	for _, tc := range []struct{ name, issued string }{
		{"the subject token with a trailing space", userTok + " "},
		{"the subject token with a leading tab", "\t" + userTok},
		{"a fresh token for gemgate's audience, not the backend's", fresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, tc.issued)
			srv := tokenEndpoint(t, 200, body, new(map[string]any))
			ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			cred, err := ex.Exchange(t.Context(), userTok)
			if err == nil {
				t.Errorf("exchange accepted %q as the worker's credential (aud is gemgate's, not %q)", cred.Token, "gemstone")
			}
		})
	}
}

// The subject token spelled in the standard base64 alphabet ('+' and '/' for '-' and '_', which
// RFC 6750 token syntax allows) is another text, and no JWT to the strict reading of the aud
// check, but the very token to a JWT library that reads either alphabet (jwx does) and to a
// worker that maps it back: in a worker's hands, it is the user's token for gemgate.
func TestExchangeRefusesTheSubjectTokenInTheStandardAlphabet(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	payload := b64([]byte(`{"iss":"https://idp","aud":"https://gemgate.example/mcp","sub":"alice","name":"~~~???>>>"}`))
	userTok := header + "." + payload + ".c2ln"
	std := strings.NewReplacer("-", "+", "_", "/").Replace(payload)
	if std == payload {
		t.Fatal("setup: the payload has no '-' or '_' to respell")
	}
	issued := header + "." + std + ".c2ln"
	body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, issued)
	srv := tokenEndpoint(t, 200, body, new(map[string]any))
	ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone",
		GatewayAudiences: []string{"https://gemgate.example/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if cred, err := ex.Exchange(t.Context(), userTok); err == nil {
		t.Errorf("exchange accepted %q, the subject token in the standard base64 alphabet, as the worker's credential", cred.Token)
	}
}

// What an issuer gives for the backend passes: a JWT whose aud holds the backend's audience
// (alone or with others), or an opaque token, whose audience only the issuer knows.
func TestExchangeTakesTheBackendsToken(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
	subject := header + "." + b64([]byte(`{"aud":"https://gemgate.example/mcp","sub":"alice"}`)) + ".c2ln"
	for _, issued := range []string{
		header + "." + b64([]byte(`{"aud":"gemstone","sub":"alice"}`)) + ".c2ln",
		header + "." + b64([]byte(`{"aud":["account","gemstone"],"sub":"alice"}`)) + ".c2ln",
		"opaque-2YotnFZFEjr1zCsicMWpAA",
	} {
		body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, issued)
		srv := tokenEndpoint(t, 200, body, new(map[string]any))
		ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
		if err != nil {
			t.Fatal(err)
		}
		if cred, err := ex.Exchange(t.Context(), subject); err != nil || cred.Token != issued {
			t.Errorf("issued %q: %v, %q; want it handed on", issued, err, cred.Token)
		}
	}
}

// TestExchangeRefusesTheSubjectTokenBack: a token endpoint that answers a token exchange
// with the very token it was sent (an IdP or proxy that ignores the audience, a misrouted
// exchange_token_url answering with an echo) makes `worker_credential: exchange` into
// `passthrough` without the startup warning: the user's own access token, valid at gemgate
// and at every resource that accepts it, lands in a worker, which the threat model does not
// trust and the MCP specification forbids. The issued token must be another token.
func TestExchangeRefusesTheSubjectTokenBack(t *testing.T) {
	var seen map[string]any
	body := fmt.Sprintf(`{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, subject)
	srv := tokenEndpoint(t, 200, body, &seen)
	ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := ex.Exchange(t.Context(), subject)
	if err == nil && cred.Token == subject {
		t.Error("the exchange handed back the caller's own access token as the worker's credential")
	}
}

// A token endpoint that refuses the client (a misconfigured or broken issuer, or a proxy in
// front of it) may quote what it was sent: the client secret, or the Basic header carrying
// it. The refusal's text is logged, so it is cleared of the secret in each form.
func TestRefusalQuotingTheClientSecretIsRedacted(t *testing.T) {
	const id, secret = "gemgate", "Sup3r-S3cret/Exchange+Value"
	forms := map[string]string{
		"plain":      secret,
		"form":       url.QueryEscape(secret),
		"basic":      base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(secret))),
		"subject":    subject,
		"subjectURL": url.QueryEscape(subject),
	}
	for name, quoted := range forms {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":"invalid_client","error_description":"you sent ` + quoted + `"}`))
			}))
			defer srv.Close()
			ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: id, ClientSecret: secret, Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ex.Exchange(t.Context(), subject)
			var re *Error
			if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized || re.Code != "invalid_client" {
				t.Fatalf("want the refusal (401 invalid_client), got %v", err)
			}
			if strings.Contains(err.Error(), quoted) || !strings.Contains(err.Error(), "you sent [redacted]") {
				t.Errorf("the refusal's text was not cleared of %s: %q", name, err.Error())
			}
		})
	}
}

// What an issuer writes into an error (a description, a code, a token type) is clipped: a
// hostile or broken one cannot make one log line per worker start of any size it likes.
func TestIssuerTextInErrorsIsClipped(t *testing.T) {
	huge := strings.Repeat("A", 900<<10)
	for name, body := range map[string]string{
		"issued_token_type": `{"access_token":"backend","token_type":"Bearer","issued_token_type":"` + huge + `"}`,
		"token_type":        `{"access_token":"backend","token_type":"` + huge + `"}`,
		"error_description": `{"error":"invalid_grant","error_description":"` + huge + `"}`,
		"error":             `{"error":"` + huge + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if strings.Contains(body, `"error"`) {
					w.WriteHeader(http.StatusBadRequest)
				}
				w.Write([]byte(body))
			}))
			defer srv.Close()
			ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "g", ClientSecret: "s", Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ex.Exchange(t.Context(), subject)
			if err == nil {
				t.Fatal("accepted")
			}
			if n := len(err.Error()); n > 2*maxErrorText+200 {
				t.Errorf("the error is %d bytes long: the issuer's text is not clipped", n)
			}
			if !strings.Contains(err.Error(), "more)") {
				t.Errorf("the error does not say what was cut: %.300q", err.Error())
			}
		})
	}
}

// A redirect of the exchange is never followed, whatever host it names: the request carries
// the client secret and the user's token. The exchange fails saying so.
func TestExchangeDoesNotFollowARedirect(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var elsewhere int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				http.Redirect(w, r, "/elsewhere", code)
				return
			}
			elsewhere++
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"access_token":"backend","token_type":"Bearer"}`))
		}))
		ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "g", ClientSecret: "s", Audience: "gemstone"})
		if err != nil {
			t.Fatal(err)
		}
		cred, err := ex.Exchange(t.Context(), subject)
		srv.Close()
		if err == nil || cred.Token != "" || elsewhere != 0 {
			t.Errorf("HTTP %d: the redirect was followed (%d requests there, token %q, err %v)", code, elsewhere, cred.Token, err)
		} else if !strings.Contains(err.Error(), "redirected to") || strings.Contains(err.Error(), subject) {
			t.Errorf("HTTP %d: the error does not say why, or carries the token: %v", code, err)
		}
	}
}

// stalledEndpoint is a token endpoint inside an http.RoundTripper that takes the request and
// never answers: no sockets, so it also works inside a testing/synctest bubble.
type stalledEndpoint struct{}

func (stalledEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// A token endpoint that takes the request and never answers: the exchange ends at its
// timeout, 10s, with an error that is not a context error (its caller's context is live, and
// a caller may read a context error as its client gone), and a caller's own end still ends it
// at once.
func TestStalledExchangeEndsAtItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex, err := New(Config{TokenURL: "https://idp.example/token", ClientID: "g", ClientSecret: "s", Audience: "gemstone",
			HTTPClient: &http.Client{Transport: stalledEndpoint{}}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = ex.Exchange(context.Background(), subject)
		if err == nil || !strings.Contains(err.Error(), "no answer within 10s") {
			t.Fatalf("want the timeout's error, got %v", err)
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("the timeout reads as a context error: %v", err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("the exchange took %s, want 10s", d)
		}

		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		start = time.Now()
		if _, err := ex.Exchange(ctx, subject); !errors.Is(err, context.Canceled) {
			t.Errorf("a caller's cancel: want context.Canceled, got %v", err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("a caller's cancel ended the exchange after %s, want 50ms", d)
		}
	})
}
