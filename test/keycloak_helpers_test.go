package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The Keycloak suite (keycloak_*_test.go) runs gemgate serve against the real Keycloak that
// .ci/keycloak.sh starts with deploy/keycloak/realm-gemgate.json. Its settings come from
// `eval "$(.ci/keycloak.sh env)"`.

// kcEnv is what .ci/keycloak.sh env exports.
type kcEnv struct {
	URL, Issuer, TokenURL          string
	AdminUser, AdminPassword       string
	RealmFile, Home                string
	PublicClient                   string
	CIClient, CISecret             string
	ExchangeClient, ExchangeSecret string
	ExchangeAudience, DemoAudience string
	ManagementURL                  string
}

// needKeycloak returns the Keycloak settings, skipping the test when there are none, or failing
// it when GEMGATE_TEST_REQUIRE_KEYCLOAK=1 says a Keycloak is expected.
func needKeycloak(t *testing.T) kcEnv {
	t.Helper()
	e := kcEnv{
		URL: os.Getenv("KEYCLOAK_URL"), Issuer: os.Getenv("KEYCLOAK_ISSUER"), TokenURL: os.Getenv("KEYCLOAK_TOKEN_URL"),
		AdminUser: os.Getenv("KEYCLOAK_ADMIN_USER"), AdminPassword: os.Getenv("KEYCLOAK_ADMIN_PASSWORD"),
		RealmFile: os.Getenv("KEYCLOAK_REALM_FILE"), Home: os.Getenv("KEYCLOAK_HOME"),
		PublicClient: os.Getenv("KEYCLOAK_PUBLIC_CLIENT_ID"),
		CIClient:     os.Getenv("KEYCLOAK_CI_CLIENT_ID"), CISecret: os.Getenv("KEYCLOAK_CI_CLIENT_SECRET"),
		ExchangeClient: os.Getenv("KEYCLOAK_EXCHANGE_CLIENT_ID"), ExchangeSecret: os.Getenv("KEYCLOAK_EXCHANGE_CLIENT_SECRET"),
		ExchangeAudience: os.Getenv("KEYCLOAK_EXCHANGE_AUDIENCE"), DemoAudience: os.Getenv("KEYCLOAK_DEMO_AUDIENCE"),
		ManagementURL: os.Getenv("KEYCLOAK_MANAGEMENT_URL"),
	}
	if e.Issuer == "" {
		msg := "KEYCLOAK_ISSUER is not set; run .ci/keycloak.sh start and eval its env: eval \"$(.ci/keycloak.sh env)\""
		if os.Getenv("GEMGATE_TEST_REQUIRE_KEYCLOAK") == "1" {
			t.Fatal(msg + " (GEMGATE_TEST_REQUIRE_KEYCLOAK=1)")
		}
		t.Skip(msg)
	}
	for name, v := range map[string]string{"KEYCLOAK_URL": e.URL, "KEYCLOAK_TOKEN_URL": e.TokenURL, "KEYCLOAK_CI_CLIENT_SECRET": e.CISecret,
		"KEYCLOAK_EXCHANGE_CLIENT_SECRET": e.ExchangeSecret, "KEYCLOAK_DEMO_AUDIENCE": e.DemoAudience, "KEYCLOAK_PUBLIC_CLIENT_ID": e.PublicClient} {
		if v == "" {
			t.Fatalf("KEYCLOAK_ISSUER is set but %s is not; eval \"$(.ci/keycloak.sh env)\"", name)
		}
	}
	resp, err := http.Get(e.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatalf("Keycloak at %s does not answer: %v (is it running? .ci/keycloak.sh start)", e.Issuer, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Keycloak discovery at %s answered %s", e.Issuer, resp.Status)
	}
	return e
}

// kcServeAddr is where the suite runs gemgate serve; its public URL is http://<addr>/mcp.
const kcServeAddr = "127.0.0.1:18090"

// kcServe runs `gemgate serve` against Keycloak on addr with the demo worker (later flags win)
// and waits for /healthz. The demo worker runs as a command, so gemgate is told which of its
// tools read-only sessions may use (it vouches for the built-in demo worker only). env adds to gemgate's environment (secrets go there). It is stopped
// with SIGTERM at cleanup and must exit 0 with no worker left.
func kcServe(t *testing.T, e kcEnv, addr string, env []string, flags ...string) *gemgate {
	t.Helper()
	args := append([]string{"serve", "--drain-delay", "0s", "--listen", addr, "--issuer", e.Issuer, "--audiences", e.DemoAudience,
		"--user-claim", "preferred_username", "--worker", "command", "--worker-command", workerBin + " worker demo",
		"--read-only-tools", "whoami,echo,list_notes,read_note,search_notes", "--data-dir", t.TempDir(), "--metrics-listen", "off", "--log-format", "json", "--log-level", "debug"}, flags...)
	g := launch(t, launchOpts{Args: args, Env: env, Poll: func(*gemgate) bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}})
	g.URL = "http://" + addr + "/mcp"
	return g
}

// kcTokenResponse is a token endpoint's answer.
type kcTokenResponse struct {
	AccessToken string `json:"access_token"`
	Scope       string `json:"scope"`
	ExpiresIn   int    `json:"expires_in"`
}

// kcPostToken posts form to the token endpoint, with basic client authentication when secret
// is set, and decodes a 200 answer.
func kcPostToken(t *testing.T, e kcEnv, clientID, secret string, form url.Values) kcTokenResponse {
	t.Helper()
	if secret == "" {
		form.Set("client_id", clientID)
	}
	req, err := http.NewRequest(http.MethodPost, e.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		// Error answers carry no token; they are safe to show.
		t.Fatalf("token request (%s) answered %s: %s", form.Get("grant_type"), resp.Status, body)
	}
	var tr kcTokenResponse
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("token response without access_token (%v)", err)
	}
	return tr
}

// kcCIToken is a client-credentials token of the CI client (service-account-gemgate-ci).
func kcCIToken(t *testing.T, e kcEnv, scope string) kcTokenResponse {
	t.Helper()
	return kcPostToken(t, e, e.CIClient, e.CISecret, url.Values{"grant_type": {"client_credentials"}, "scope": {scope}})
}

var kcLoginForm = regexp.MustCompile(`<form[^>]*id="kc-form-login"[^>]*action="([^"]+)"`)

// kcLogin runs the authorization code flow with PKCE S256 for the public client through
// Keycloak's own login form, as a browser would, and returns the tokens.
func kcLogin(t *testing.T, e kcEnv, user, password, scope string) kcTokenResponse {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := kcRandom(32)
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	state := kcRandom(16)
	redirect := "http://127.0.0.1:43117/callback"
	q := url.Values{"response_type": {"code"}, "client_id": {e.PublicClient}, "redirect_uri": {redirect}, "scope": {scope},
		"state": {state}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	resp, err := browser.Get(e.Issuer + "/protocol/openid-connect/auth?" + q.Encode())
	if err != nil {
		t.Fatalf("authorization request: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorization request answered %s, want the login page", resp.Status)
	}
	m := kcLoginForm.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no kc-form-login on Keycloak's login page:\n%.2000s", page)
	}
	action := html.UnescapeString(string(m[1]))
	resp, err = browser.PostForm(action, url.Values{"username": {user}, "password": {password}, "credentialId": {""}})
	if err != nil {
		t.Fatalf("posting the login form: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("login as %s answered %s, want 302 to the redirect URI:\n%.2000s", user, resp.Status, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), redirect+"?") {
		t.Fatalf("login redirected to %q, want %s?...", resp.Header.Get("Location"), redirect)
	}
	if got := loc.Query().Get("state"); got != state {
		t.Fatalf("redirect state = %q, want %q", got, state)
	}
	code := loc.Query().Get("code")
	if code == "" {
		t.Fatalf("redirect without code: error=%q %q", loc.Query().Get("error"), loc.Query().Get("error_description"))
	}
	return kcPostToken(t, e, e.PublicClient, "", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {verifier}})
}

func kcRandom(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// kcClaims decodes a JWT's payload without verifying it (gemgate and Keycloak do that).
func kcClaims(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	return c
}

// kcKid is the key id in a JWT's header.
func kcKid(t *testing.T, jwt string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.SplitN(jwt, ".", 2)[0])
	if err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	return h.Kid
}

// kcScopes splits a token's scope claim.
func kcScopes(t *testing.T, jwt string) []string {
	s, _ := kcClaims(t, jwt)["scope"].(string)
	return strings.Fields(s)
}

// kcAdmin calls Keycloak's admin REST API as the bootstrap admin.
type kcAdmin struct {
	e     kcEnv
	token string
}

func newKCAdmin(t *testing.T, e kcEnv) *kcAdmin {
	t.Helper()
	tr := kcPostToken(t, kcEnv{TokenURL: e.URL + "/realms/master/protocol/openid-connect/token"}, "admin-cli", "",
		url.Values{"grant_type": {"password"}, "username": {e.AdminUser}, "password": {e.AdminPassword}})
	return &kcAdmin{e: e, token: tr.AccessToken}
}

// do sends one admin request; path is below /admin/realms/gemgate. A JSON answer is decoded into
// out when out is not nil.
func (a *kcAdmin) do(t *testing.T, method, path string, in, out any) *http.Response {
	t.Helper()
	return kcAdminAt(t, a, method, "/gemgate"+path, in, out)
}

// kcAdminAt sends one admin request below /admin/realms (any realm) and decodes a JSON answer
// into out when out is not nil.
func kcAdminAt(t *testing.T, a *kcAdmin, method, path string, in, out any) *http.Response {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.e.URL+"/admin/realms"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("admin %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("admin %s %s answered %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("admin %s %s: %v", method, path, err)
		}
	}
	return resp
}

// kcRaw is a plain HTTP MCP client, for what an SDK would hide: status codes and challenges.
type kcRaw struct {
	url, session, protocol string
}

// post sends one JSON-RPC message with token and returns the status, the headers and the
// JSON-RPC message of the answer (from JSON or from the first SSE event).
func (s *kcRaw) post(t *testing.T, token string, msg map[string]any) (int, http.Header, map[string]any) {
	t.Helper()
	msg["jsonrpc"] = "2.0"
	b, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	if s.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", s.protocol)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", s.url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var answer map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(body), "\n") {
			if data, ok := strings.CutPrefix(line, "data:"); ok && json.Unmarshal([]byte(strings.TrimSpace(data)), &answer) == nil {
				break
			}
		}
	} else {
		json.Unmarshal(body, &answer)
	}
	return resp.StatusCode, resp.Header, answer
}

// kcOpen initializes a session with token over plain HTTP.
func kcOpen(t *testing.T, mcpURL, token string) *kcRaw {
	t.Helper()
	s := &kcRaw{url: mcpURL}
	status, h, answer := s.post(t, token, map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "gemgate-keycloak-test", "version": "1"}}})
	if status != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize answered %d (session %q): %v", status, h.Get("Mcp-Session-Id"), answer)
	}
	s.session = h.Get("Mcp-Session-Id")
	res, _ := answer["result"].(map[string]any)
	s.protocol, _ = res["protocolVersion"].(string)
	if status, _, _ := s.post(t, token, map[string]any{"method": "notifications/initialized"}); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized answered %d", status)
	}
	return s
}

// kcGet is the status and body of an unauthenticated GET of u.
func kcGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// kcLogLines are gemgate's log lines that contain s.
func kcLogLines(g *gemgate, s string) []string {
	var out []string
	for _, l := range strings.Split(g.logs.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// kcWhoami calls whoami over a raw session and returns its text.
func kcWhoami(t *testing.T, s *kcRaw, token string) (int, string) {
	t.Helper()
	status, _, answer := s.post(t, token, map[string]any{"id": 7, "method": "tools/call", "params": map[string]any{"name": "whoami", "arguments": map[string]any{}}})
	res, _ := answer["result"].(map[string]any)
	content, _ := res["content"].([]any)
	var parts []string
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return status, strings.Join(parts, "\n")
}
