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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gemgate/gemgate/auth/devissuer"
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
	tests := []struct {
		name   string
		scopes []string
		extra  map[string]any
	}{
		{"without scope", nil, nil},
		{"with scope", []string{"gs:login", "gs:read"}, map[string]any{"form:scope": "gs:login gs:read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen map[string]any
			srv := tokenEndpoint(t, 200, `{"access_token":"backend-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`, &seen)
			ex, err := New(Config{
				TokenURL: srv.URL + "/token", ClientID: "gemgate", ClientSecret: "s3cret",
				Audience: "gemstone", Scopes: tt.scopes,
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
			for k, v := range tt.extra {
				want[k] = v
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
		})
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
		{"bad scope", func(c *Config) { c.Scopes = []string{"a b"} }, []string{"scope"}},
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
