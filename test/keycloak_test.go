package test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The realm Keycloak runs is deploy/keycloak/realm-gemgate.json itself: the environment names
// that file, Keycloak's import folder links to it, and what the admin API reports matches it.
func TestKeycloakRealmFileIsTheOneLoaded(t *testing.T) {
	e := needKeycloak(t)
	want, err := filepath.EvalSymlinks("../deploy/keycloak/realm-gemgate.json")
	if err != nil {
		t.Fatal(err)
	}
	want, _ = filepath.Abs(want)
	paths := map[string]string{"KEYCLOAK_REALM_FILE": e.RealmFile}
	if e.Home != "" {
		paths["Keycloak's import folder"] = filepath.Join(e.Home, "data", "import", "realm-gemgate.json")
	}
	for what, p := range paths {
		got, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, _ = filepath.Abs(got); got != want {
			t.Errorf("%s resolves to %s, want the checked-in %s", what, got, want)
		}
	}

	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		DisplayName         string `json:"displayName"`
		AccessTokenLifespan int    `json:"accessTokenLifespan"`
		Clients             []struct {
			ClientID string `json:"clientId"`
			Secret   string `json:"secret"`
		} `json:"clients"`
		ClientScopes []kcClientScope `json:"clientScopes"`
		Roles        struct {
			Realm []struct {
				Name string `json:"name"`
			} `json:"realm"`
		} `json:"roles"`
		Users []struct {
			Username   string   `json:"username"`
			RealmRoles []string `json:"realmRoles"`
		} `json:"users"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("realm file: %v", err)
	}

	admin := newKCAdmin(t, e)
	var realm struct {
		DisplayName         string `json:"displayName"`
		AccessTokenLifespan int    `json:"accessTokenLifespan"`
	}
	admin.do(t, http.MethodGet, "", nil, &realm)
	if realm.DisplayName != file.DisplayName || realm.AccessTokenLifespan != file.AccessTokenLifespan {
		t.Errorf("realm displayName/accessTokenLifespan = %q/%d, file says %q/%d", realm.DisplayName, realm.AccessTokenLifespan, file.DisplayName, file.AccessTokenLifespan)
	}

	var clients []kcRep
	admin.do(t, http.MethodGet, "/clients", nil, &clients)
	for _, c := range file.Clients {
		if !slices.ContainsFunc(clients, func(k kcRep) bool { return k.ClientID == c.ClientID }) {
			t.Errorf("client %s of the realm file is not in Keycloak", c.ClientID)
		}
		if c.ClientID == e.CIClient && c.Secret != e.CISecret || c.ClientID == e.ExchangeClient && c.Secret != e.ExchangeSecret {
			t.Errorf("the environment's secret for %s is not the realm file's", c.ClientID)
		}
	}

	var scopes []kcClientScope
	admin.do(t, http.MethodGet, "/client-scopes", nil, &scopes)
	for _, name := range []string{"mcp:use", "mcp:write", "gemstone"} {
		i := slices.IndexFunc(file.ClientScopes, func(s kcClientScope) bool { return s.Name == name })
		j := slices.IndexFunc(scopes, func(s kcClientScope) bool { return s.Name == name })
		if i < 0 || j < 0 {
			t.Errorf("client scope %s: in file %v, in Keycloak %v", name, i >= 0, j >= 0)
			continue
		}
		if f, k := file.ClientScopes[i].audiences(), scopes[j].audiences(); !slices.Equal(f, k) {
			t.Errorf("client scope %s: audience mappers %v in the file, %v in Keycloak", name, f, k)
		}
	}
	if aud := file.ClientScopes[slices.IndexFunc(file.ClientScopes, func(s kcClientScope) bool { return s.Name == "mcp:use" })].audiences(); !slices.Contains(aud, e.DemoAudience) {
		t.Errorf("mcp:use maps audiences %v, want %s among them", aud, e.DemoAudience)
	}

	var roles []kcRep
	admin.do(t, http.MethodGet, "/roles", nil, &roles)
	if !slices.ContainsFunc(roles, func(r kcRep) bool { return r.Name == "mcp-writer" }) {
		t.Errorf("Keycloak's realm roles %v lack mcp-writer", roles)
	}
	for _, u := range file.Users {
		if u.Username != "alice" && u.Username != "bob" {
			continue
		}
		var found []kcRep
		admin.do(t, http.MethodGet, "/users?exact=true&username="+u.Username, nil, &found)
		if len(found) != 1 {
			t.Fatalf("Keycloak has %d users named %s", len(found), u.Username)
		}
		var mapped []kcRep
		admin.do(t, http.MethodGet, "/users/"+found[0].ID+"/role-mappings/realm", nil, &mapped)
		var got []string
		for _, r := range mapped {
			got = append(got, r.Name)
		}
		if f, k := slices.Contains(u.RealmRoles, "mcp-writer"), slices.Contains(got, "mcp-writer"); f != k || (u.Username == "alice") != f {
			t.Errorf("%s holds mcp-writer: file %v, Keycloak %v (roles %v)", u.Username, f, k, got)
		}
	}
}

// kcRep is the part of an admin API representation (client, role, user) the suite reads.
type kcRep struct {
	ID       string `json:"id"`
	ClientID string `json:"clientId"`
	Name     string `json:"name"`
}

// kcClientScope is a client scope as the realm file and the admin API spell it.
type kcClientScope struct {
	Name            string `json:"name"`
	ProtocolMappers []struct {
		ProtocolMapper string            `json:"protocolMapper"`
		Config         map[string]string `json:"config"`
	} `json:"protocolMappers"`
}

// audiences are the custom audiences the scope's audience mappers add, sorted.
func (s kcClientScope) audiences() []string {
	var out []string
	for _, m := range s.ProtocolMappers {
		if m.ProtocolMapper == "oidc-audience-mapper" {
			out = append(out, m.Config["included.custom.audience"]+m.Config["included.client.audience"])
		}
	}
	slices.Sort(out)
	return out
}

// kcRecorder records every HTTP exchange of a client, without credentials.
type kcRecorder struct {
	mu   sync.Mutex
	seen []kcExchange
}

type kcExchange struct {
	Method, URL string
	Bearer      bool
	Status      int
}

func (r *kcRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	x := kcExchange{Method: req.Method, URL: strings.SplitN(req.URL.String(), "?", 2)[0], Bearer: strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ")}
	if err == nil {
		x.Status = resp.StatusCode
	}
	r.mu.Lock()
	r.seen = append(r.seen, x)
	r.mu.Unlock()
	return resp, err
}

// The Go SDK client with its client-credentials OAuth handler starts without a token and finds
// its way: 401 from gemgate, gemgate's protected-resource metadata, Keycloak's metadata, a token
// for gemgate-ci, and the retried initialize.
func TestKeycloakClientCredentialsGoSDK(t *testing.T) {
	e := needKeycloak(t)
	g := kcServe(t, e, kcServeAddr, nil)
	rec := &kcRecorder{}
	hc := &http.Client{Transport: rec}
	handler, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: e.CIClient, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: e.CISecret}, Issuer: e.Issuer},
		HTTPClient:  hc,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ts, _ := handler.TokenSource(ctx); ts != nil {
		t.Fatal("the handler holds a token source before connecting")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-keycloak-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL, HTTPClient: hc, OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nHTTP: %+v\nlogs:\n%s", err, rec.seen, g.logs)
	}
	defer cs.Close()

	metadata := "http://" + kcServeAddr + "/.well-known/oauth-protected-resource/mcp"
	steps := []struct {
		what  string
		match func(kcExchange) bool
	}{
		{"unauthenticated POST answered 401", func(x kcExchange) bool {
			return x.Method == "POST" && x.URL == g.URL && !x.Bearer && x.Status == 401
		}},
		{"gemgate's resource metadata", func(x kcExchange) bool { return x.Method == "GET" && x.URL == metadata && x.Status == 200 }},
		{"Keycloak's metadata", func(x kcExchange) bool {
			return x.Method == "GET" && strings.HasPrefix(x.URL, e.URL) && strings.Contains(x.URL, "/.well-known/") && x.Status == 200
		}},
		{"token request", func(x kcExchange) bool { return x.Method == "POST" && x.URL == e.TokenURL && x.Status == 200 }},
		{"initialize with the token", func(x kcExchange) bool {
			return x.Method == "POST" && x.URL == g.URL && x.Bearer && x.Status == 200
		}},
	}
	at := 0
	for _, s := range steps {
		i := slices.IndexFunc(rec.seen[at:], s.match)
		if i < 0 {
			t.Fatalf("no %s after step %d; HTTP exchanges: %+v", s.what, at, rec.seen)
		}
		at += i + 1
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "write_note") {
		t.Errorf("gemgate-ci (mcp-writer) does not see write_note: %v", names)
	}
	if w := text(callTool(t, cs, "whoami", nil)); !strings.Contains(w, "user=service-account-gemgate-ci ") || !strings.Contains(w, "read_only=false") {
		t.Errorf("whoami = %q", w)
	}
	if res := callTool(t, cs, "write_note", map[string]any{"name": "ci", "text": "from the Go SDK"}); res.IsError {
		t.Errorf("write_note failed: %s", text(res))
	}
}

// The TypeScript SDK's ClientCredentialsProvider goes the same way (test/node/ts-client.mjs).
func TestKeycloakClientCredentialsTypeScriptSDK(t *testing.T) {
	e := needKeycloak(t)
	needNodeModules(t)
	g := kcServe(t, e, kcServeAddr, nil)
	run := runNode(t, systemNode(t), "ts-client.mjs", []string{"GEMGATE_CLIENT_SECRET=" + e.CISecret},
		"--url", g.URL, "--issuer", e.Issuer, "--client-id", e.CIClient, "--user", "service-account-gemgate-ci",
		"--mode", "read-write", "--scope", "mcp:use mcp:write")
	checkNodeReport(t, g, run)
	if got, want := nodeStrings(run.report["auth_flow"]), []string{"401", "resource-metadata", "issuer-metadata", "token", "initialize"}; !slices.Equal(got, want) {
		t.Errorf("auth flow = %v, want %v", got, want)
	}
}

// alice logs in through Keycloak's login form with PKCE: mcp:write is granted, she sees the
// mutating tools and can use them.
func TestKeycloakAuthorizationCodeAlice(t *testing.T) {
	e := needKeycloak(t)
	tok := kcLogin(t, e, "alice", "alice", "mcp:use mcp:write")
	if scopes := kcScopes(t, tok.AccessToken); !slices.Contains(scopes, "mcp:write") || !slices.Contains(scopes, "mcp:use") {
		t.Fatalf("alice's token scopes = %v, want mcp:use and mcp:write", scopes)
	}
	g := kcServe(t, e, kcServeAddr, nil)
	// alice's client confirms what the worker asks her to (delete_note asks by elicitation).
	cs := connect(t, g.URL, tok.AccessToken, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	names := toolNames(t, cs)
	for _, want := range []string{"whoami", "read_note", "write_note", "delete_note"} {
		if !slices.Contains(names, want) {
			t.Errorf("alice's tools/list lacks %s: %v", want, names)
		}
	}
	if w := text(callTool(t, cs, "whoami", nil)); !strings.Contains(w, "user=alice ") || !strings.Contains(w, "read_only=false") {
		t.Errorf("whoami = %q", w)
	}
	if res := callTool(t, cs, "write_note", map[string]any{"name": "kc", "text": "alice was here"}); res.IsError {
		t.Fatalf("write_note: %s", text(res))
	}
	if got := text(callTool(t, cs, "read_note", map[string]any{"name": "kc"})); !strings.Contains(got, "alice was here") {
		t.Errorf("read_note = %q", got)
	}
	if res := callTool(t, cs, "delete_note", map[string]any{"name": "kc"}); res.IsError || !strings.Contains(text(res), `deleted note "kc"`) {
		t.Errorf("delete_note: %s", text(res))
	}
}

// bob asks for mcp:write too, Keycloak withholds it, and gemgate gives him a read-only session:
// the mutating tools are hidden, and write_note by name is refused with 403 insufficient_scope.
func TestKeycloakAuthorizationCodeBob(t *testing.T) {
	e := needKeycloak(t)
	tok := kcLogin(t, e, "bob", "bob", "mcp:use mcp:write")
	if scopes := kcScopes(t, tok.AccessToken); slices.Contains(scopes, "mcp:write") || !slices.Contains(scopes, "mcp:use") {
		t.Fatalf("bob's token scopes = %v, want mcp:use without mcp:write", scopes)
	}
	g := kcServe(t, e, kcServeAddr, nil)
	cs := connect(t, g.URL, tok.AccessToken, nil)
	names := toolNames(t, cs)
	for _, hidden := range []string{"write_note", "delete_note"} {
		if slices.Contains(names, hidden) {
			t.Errorf("bob's tools/list shows %s: %v", hidden, names)
		}
	}
	if !slices.Contains(names, "read_note") {
		t.Errorf("bob's tools/list lacks read_note: %v", names)
	}
	if w := text(callTool(t, cs, "whoami", nil)); !strings.Contains(w, "user=bob ") || !strings.Contains(w, "read_only=true") {
		t.Errorf("whoami = %q", w)
	}

	raw := &kcRaw{url: g.URL, session: cs.ID(), protocol: cs.InitializeResult().ProtocolVersion}
	status, h, answer := raw.post(t, tok.AccessToken, map[string]any{"id": 9, "method": "tools/call",
		"params": map[string]any{"name": "write_note", "arguments": map[string]any{"name": "kc", "text": "bob was here"}}})
	if status != http.StatusForbidden {
		t.Fatalf("write_note by name answered %d, want 403: %v", status, answer)
	}
	ch := h.Get("WWW-Authenticate")
	for _, want := range []string{`Bearer `, `error="insufficient_scope"`, `resource_metadata="http://` + kcServeAddr + `/.well-known/oauth-protected-resource/mcp"`} {
		if !strings.Contains(ch, want) {
			t.Errorf("403 challenge %q lacks %s", ch, want)
		}
	}
	if !strings.Contains(ch, `scope="`) || !strings.Contains(ch[strings.Index(ch, `scope="`):], "mcp:write") {
		t.Errorf("403 challenge %q does not ask for mcp:write", ch)
	}
	rpcErr, _ := answer["error"].(map[string]any)
	data, _ := rpcErr["data"].(map[string]any)
	if data["kind"] != "readOnly" || answer["id"] != 9.0 {
		t.Errorf("403 body = %v, want a JSON-RPC error for id 9 with data.kind readOnly", answer)
	}
	if got := text(callTool(t, cs, "read_note", map[string]any{"name": "kc"})); strings.Contains(got, "bob was here") {
		t.Errorf("the refused write_note wrote: %q", got)
	}
}

// A session belongs to the user who opened it: bob's valid token with alice's session id is
// answered 404, and alice's session goes on working.
func TestKeycloakSessionOfAnotherUser(t *testing.T) {
	e := needKeycloak(t)
	alice := kcLogin(t, e, "alice", "alice", "mcp:use mcp:write").AccessToken
	bob := kcLogin(t, e, "bob", "bob", "mcp:use").AccessToken
	g := kcServe(t, e, kcServeAddr, nil)
	s := kcOpen(t, g.URL, alice)
	list := map[string]any{"id": 2, "method": "tools/list"}
	if status, _, answer := s.post(t, bob, list); status != http.StatusNotFound {
		t.Errorf("bob with alice's session id: %d %v, want 404", status, answer)
	}
	if status, w := kcWhoami(t, s, alice); status != http.StatusOK || !strings.Contains(w, "user=alice ") {
		t.Errorf("alice's own session afterwards: %d %q", status, w)
	}
}

// Keycloak stops while gemgate runs: the keys gemgate already fetched keep validating (a token
// obtained before the stop opens a new session), `gemgate check` reports the issuer as
// unreachable, and /readyz names the problem. Keycloak is started again at the end. This test
// must stay the last of the suite.
func TestKeycloakStoppedMidTest(t *testing.T) {
	e := needKeycloak(t)
	script, err := filepath.Abs("../.ci/keycloak.sh")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(script, "status").CombinedOutput(); err != nil {
		msg := "this Keycloak was not started by .ci/keycloak.sh, which this test stops and restarts: " + strings.TrimSpace(string(out))
		if os.Getenv("GEMGATE_TEST_REQUIRE_KEYCLOAK") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	g := kcServe(t, e, kcServeAddr, nil)
	before := kcCIToken(t, e, "mcp:use").AccessToken
	unused := kcCIToken(t, e, "mcp:use").AccessToken
	if status, w := kcWhoami(t, kcOpen(t, g.URL, before), before); status != http.StatusOK || !strings.Contains(w, "user=service-account-gemgate-ci ") {
		t.Fatalf("before the stop: %d %q", status, w)
	}

	t.Cleanup(func() {
		start := time.Now()
		out, err := exec.Command(script, "start").CombinedOutput()
		if err != nil {
			t.Errorf(".ci/keycloak.sh start: %v\n%s", err, out)
			return
		}
		t.Logf("Keycloak restarted in %v", time.Since(start).Round(time.Second))
	})
	stopped := time.Now()
	if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
		t.Fatalf(".ci/keycloak.sh stop: %v\n%s", err, out)
	}
	t.Logf("Keycloak stopped in %v", time.Since(stopped).Round(time.Millisecond))
	if resp, err := http.Get(e.Issuer + "/.well-known/openid-configuration"); err == nil {
		resp.Body.Close()
		t.Fatalf("Keycloak still answers after the stop: %s", resp.Status)
	}

	// A token gemgate has never seen, checked with the keys it fetched at start.
	if status, w := kcWhoami(t, kcOpen(t, g.URL, unused), unused); status != http.StatusOK || !strings.Contains(w, "user=service-account-gemgate-ci ") {
		t.Errorf("a new session with a token from before the stop: %d %q", status, w)
	}

	check := exec.Command(gemgateBin, "check", "--issuer", e.Issuer, "--audiences", e.DemoAudience, "--listen", "127.0.0.1:0",
		"--metrics-listen", "off", "--worker", "command", "--worker-command", workerBin+" worker demo")
	out, err := check.CombinedOutput()
	t.Logf("gemgate check with Keycloak stopped:\n%s", out)
	if code := check.ProcessState.ExitCode(); code != 1 {
		t.Errorf("gemgate check exited %d (%v), want 1:\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "PROBLEM  issuer "+e.Issuer) {
		t.Errorf("gemgate check does not report the issuer as a problem:\n%s", out)
	}

	// /readyz looks at the issuer at most every few seconds; poll it for a while.
	var status int
	var body string
	for deadline := time.Now().Add(20 * time.Second); ; {
		status, body = kcGet(t, "http://"+kcServeAddr+"/readyz")
		if status == http.StatusServiceUnavailable || strings.Contains(strings.ToLower(body), "issuer") || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("/readyz with Keycloak stopped: %d %q", status, body)
	if status != http.StatusServiceUnavailable && !strings.Contains(strings.ToLower(body), "issuer") {
		t.Errorf("/readyz answers %d %q with the issuer unreachable; want 503 or a body naming the issuer problem (e.g. using cached keys)", status, body)
	}
}
