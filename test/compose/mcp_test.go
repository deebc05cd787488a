package compose

// The requests a user's tools make against the demo, over the published ports: Keycloak's token
// endpoint and login form, gemgate's MCP endpoint (a 2025-06-18 session), Prometheus' API.

import (
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
)

const (
	mcpURL    = "http://127.0.0.1:8080/mcp"
	issuerURL = "http://127.0.0.1:8081/realms/gemgate"
	tokenURL  = issuerURL + "/protocol/openid-connect/token"
)

func (d *docker) get(t *testing.T, rawURL string, out any) *http.Response {
	t.Helper()
	resp, err := d.client.Get(rawURL)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %s, not JSON: %v\n%.500s", rawURL, resp.Status, err, body)
		}
	}
	return resp
}

// token posts a form to Keycloak's token endpoint and returns the access token.
func (d *docker) token(t *testing.T, clientID, secret string, form url.Values) string {
	t.Helper()
	if secret == "" {
		form.Set("client_id", clientID)
	}
	req, _ := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(clientID, secret)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		t.Fatalf("token request (%s) answered %s: %.300s", form.Get("grant_type"), resp.Status, body) // no token in an error answer
	}
	return tr.AccessToken
}

// ciToken is a client-credentials token of the realm's CI client, its secret read from the
// realm file the demo imports.
func (d *docker) ciToken(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/keycloak/realm-gemgate.json")
	if err != nil {
		t.Fatal(err)
	}
	var realm struct {
		Clients []struct{ ClientID, Secret string }
	}
	if err := json.Unmarshal(raw, &realm); err != nil {
		t.Fatal(err)
	}
	for _, c := range realm.Clients {
		if c.ClientID == "gemgate-ci" {
			return d.token(t, c.ClientID, c.Secret, url.Values{"grant_type": {"client_credentials"}, "scope": {"mcp:use"}})
		}
	}
	t.Fatal("the realm has no client gemgate-ci")
	return ""
}

var loginForm = regexp.MustCompile(`<form[^>]*id="kc-form-login"[^>]*action="([^"]+)"`)

// login signs user in through Keycloak's own login page, as a browser does for the realm's
// public client (authorization code with PKCE S256), asking for scope.
func (d *docker) login(t *testing.T, user, scope string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Transport: d.client.Transport, Timeout: d.client.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier, state := random(), random()
	sum := sha256.Sum256([]byte(verifier))
	redirect := "http://127.0.0.1:43117/callback"
	q := url.Values{"response_type": {"code"}, "client_id": {"mcp-client"}, "redirect_uri": {redirect}, "scope": {scope},
		"state": {state}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	resp, err := browser.Get(issuerURL + "/protocol/openid-connect/auth?" + q.Encode())
	if err != nil {
		t.Fatalf("authorization request: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginForm.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("authorization request answered %s without Keycloak's login form:\n%.1000s", resp.Status, page)
	}
	resp, err = browser.PostForm(html.UnescapeString(string(m[1])), url.Values{"username": {user}, "password": {user}, "credentialId": {""}})
	if err != nil {
		t.Fatalf("login form: %v", err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("state") != state || loc.Query().Get("code") == "" {
		t.Fatalf("login as %s answered %s, redirect %q; want a code for %s", user, resp.Status, resp.Header.Get("Location"), redirect)
	}
	return d.token(t, "mcp-client", "", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {redirect}, "code_verifier": {verifier}})
}

func random() string {
	b := make([]byte, 32) // 43 characters: the least a PKCE verifier may have
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// session is one MCP session (protocol 2025-06-18) of one bearer token.
type session struct {
	d     *docker
	token string
	id    string
	next  int
}

// rpc posts one JSON-RPC message and returns the HTTP status and the response message (nil for
// a notification or an error without a JSON-RPC body), from a JSON or an SSE answer.
func (s *session) rpc(t *testing.T, method string, params any) (int, map[string]any) {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if !strings.HasPrefix(method, "notifications/") {
		s.next++
		msg["id"] = s.next
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := s.d.client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	text := string(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		text = ""
		for _, line := range strings.Split(string(raw), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id"`) {
				text = data
			}
		}
	}
	var out map[string]any
	json.Unmarshal([]byte(text), &out)
	return resp.StatusCode, out
}

// open starts a session for token.
func (d *docker) open(t *testing.T, token string) *session {
	t.Helper()
	s := &session{d: d, token: token}
	code, res := s.rpc(t, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "compose-test", "version": "1"}})
	if code != http.StatusOK || res["result"] == nil || s.id == "" {
		t.Fatalf("initialize answered %d %v (session %q)", code, res, s.id)
	}
	if code, _ := s.rpc(t, "notifications/initialized", map[string]any{}); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized answered %d", code)
	}
	return s
}

// call calls a tool and returns the HTTP status and the JSON-RPC response message as JSON.
func (s *session) call(t *testing.T, tool string, args map[string]any) (int, string) {
	t.Helper()
	code, res := s.rpc(t, "tools/call", map[string]any{"name": tool, "arguments": args})
	b, _ := json.Marshal(res)
	return code, string(b)
}
