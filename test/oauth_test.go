package test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gemgate/gemgate/auth/devissuer"
)

// oauthConnect opens a session with the SDK's client-credentials OAuth handler and no token:
// the SDK must follow the 401 to the metadata, the issuer and its token endpoint.
func oauthConnect(t *testing.T, g *gemgate, user string) *mcp.ClientSession {
	t.Helper()
	var id, secret string
	for _, c := range g.Clients {
		if c.User == user {
			id, secret = c.ID, c.Secret
		}
	}
	if id == "" {
		t.Fatalf("gemgate dev printed no client for %s: %+v", user, g.Clients)
	}
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-e2e-oauth", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL, OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("connect as %s with the OAuth handler: %v", user, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestSDKOAuthDiscoveryFlow(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	t.Run("alice", func(t *testing.T) {
		cs := oauthConnect(t, g, "alice")
		if names := toolNames(t, cs); !slices.Contains(names, "write_note") {
			t.Errorf("alice's tools/list lacks write_note: %v", names)
		}
		if got := text(callTool(t, cs, "whoami", nil)); !strings.Contains(got, "user=alice") || !strings.Contains(got, "read_only=false") {
			t.Errorf("whoami = %q", got)
		}
		if res := callTool(t, cs, "write_note", map[string]any{"name": "oauth", "text": "via discovery"}); res.IsError {
			t.Errorf("write_note: %s", text(res))
		}
	})
	t.Run("bob", func(t *testing.T) {
		cs := oauthConnect(t, g, "bob")
		names := toolNames(t, cs)
		for _, mutating := range []string{"write_note", "delete_note"} {
			if slices.Contains(names, mutating) {
				t.Errorf("bob's tools/list has %s: %v", mutating, names)
			}
		}
		if got := text(callTool(t, cs, "whoami", nil)); !strings.Contains(got, "user=bob") || !strings.Contains(got, "read_only=true") {
			t.Errorf("whoami = %q", got)
		}
	})
}

// TestDevReadOnlyUserHasReadOnlyTools: with no configuration, gemgate dev's read-only user
// can use the demo's read-only tools (and no others). gemgate runs as a user starts it: no
// worker or policy flags (startDev would hand it --read-only-tools), so the built-in demo
// worker vouching for its own browsing tools is what is tested.
func TestDevReadOnlyUserHasReadOnlyTools(t *testing.T) {
	t.Parallel()
	g := launch(t, launchOpts{
		Args: []string{"dev", "--json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json"},
		FirstStdout: func(g *gemgate, line []byte) error {
			return json.Unmarshal(line, &g.devInfo)
		},
	})
	cs := connect(t, g.URL, g.Tokens["bob"], nil)
	names := toolNames(t, cs)
	for _, want := range []string{"list_notes", "read_note", "search_notes", "whoami"} {
		if !slices.Contains(names, want) {
			t.Errorf("bob's tools/list under plain gemgate dev lacks %s: %v", want, names)
		}
	}
	for _, mutating := range []string{"write_note", "delete_note"} {
		if slices.Contains(names, mutating) {
			t.Errorf("bob's tools/list has %s: %v", mutating, names)
		}
	}
}

func TestMetadataDocument(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	want := map[string]any{
		"resource":                 g.URL,
		"authorization_servers":    []any{g.Issuer},
		"scopes_supported":         []any{"mcp:use", "mcp:write"},
		"bearer_methods_supported": []any{"header"},
	}
	metaURL := strings.Replace(g.URL, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
	if g.Metadata != metaURL {
		t.Errorf("dev prints metadata %q, want %q", g.Metadata, metaURL)
	}
	root := strings.Replace(g.URL, "/mcp", "/.well-known/oauth-protected-resource", 1)
	for _, u := range []string{metaURL, root} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("GET %s: status %d, %v", u, resp.StatusCode, err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
			t.Errorf("GET %s: Content-Type %q", u, ct)
		}
		delete(doc, "resource_name") // optional
		if diff := cmp.Diff(want, doc); diff != "" {
			t.Errorf("GET %s: document mismatch (-want +got):\n%s", u, diff)
		}
	}
}

func TestChallenges(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	metaURL := strings.Replace(g.URL, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
	tests := []struct {
		name  string
		token string
		want  map[string]string
	}{
		// A 401 names every supported scope, so that clients ask for the write scope too.
		{"no token", "", map[string]string{"resource_metadata": metaURL, "scope": "mcp:use mcp:write"}},
		{"bad token", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", map[string]string{"resource_metadata": metaURL, "scope": "mcp:use mcp:write", "error": "invalid_token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawClient{t: t, url: g.URL, token: tt.token}.do("POST", "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`), nil)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", r.status)
			}
			got := parseChallenge(t, r.header.Get("WWW-Authenticate"))
			delete(got, "error_description")
			scopes := strings.Fields(got["scope"])
			slices.Sort(scopes)
			got["scope"] = strings.Join(scopes, " ")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("challenge mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if n := g.workers(); n != 0 {
		t.Errorf("%d workers after refused requests", n)
	}
}

func TestStepUpForReadOnlyUser(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	c := rawClient{t: t, url: g.URL, token: g.Tokens["bob"]}
	sid := c.initialize()
	r := c.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":"w-1","method":"tools/call","params":{"name":"write_note","arguments":{"name":"n","text":"t"}}}`), nil)
	if r.status != http.StatusForbidden {
		t.Fatalf("status %d, want 403; body %s", r.status, r.body)
	}
	ch := parseChallenge(t, r.header.Get("WWW-Authenticate"))
	if ch["error"] != "insufficient_scope" {
		t.Errorf("challenge error %q, want insufficient_scope", ch["error"])
	}
	scopes := strings.Fields(ch["scope"])
	if !slices.Contains(scopes, "mcp:use") || !slices.Contains(scopes, "mcp:write") {
		t.Errorf("challenge scope %q, want mcp:use and mcp:write", ch["scope"])
	}
	if want := strings.Replace(g.URL, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1); ch["resource_metadata"] != want {
		t.Errorf("challenge resource_metadata %q, want %q", ch["resource_metadata"], want)
	}
	msgs := r.messages(t)
	if len(msgs) != 1 || msgs[0].Error == nil || string(msgs[0].ID) != `"w-1"` {
		t.Fatalf("body %s: want one JSON-RPC error with id \"w-1\"", r.body)
	}
	var data struct{ Kind string }
	if err := json.Unmarshal(msgs[0].Error.Data, &data); err != nil || data.Kind != "readOnly" {
		t.Errorf("error data %s, want kind readOnly", msgs[0].Error.Data)
	}
	// The worker was not asked: bob's store is still empty.
	r = c.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_notes","arguments":{}}}`), nil)
	if msgs := r.messages(t); len(msgs) != 1 || !strings.Contains(string(msgs[0].Result), "no notes") {
		t.Errorf("bob's list_notes after the refused write: %s", r.body)
	}
}

func TestSessionHijackIsNotFound(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--trace-messages")
	alice := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
	sid := alice.initialize()
	r := alice.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_note","arguments":{"name":"diary","text":"alice only"}}}`), nil)
	if msgs := r.messages(t); len(msgs) != 1 || msgs[0].Result == nil {
		t.Fatalf("alice's write_note: %s", r.body)
	}
	bob := rawClient{t: t, url: g.URL, token: g.Tokens["bob"]}
	const marker = "HIJACK-BY-BOB"
	attempts := []struct{ method, body string }{
		{"POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_note","arguments":{"name":"diary","x":"` + marker + `"}}}`},
		{"POST", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_note","arguments":{"name":"diary","text":"` + marker + `"}}}`},
		{"POST", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"` + marker + `"}}`},
		{"POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"` + marker + `"}}`},
		{"GET", ""},
		{"DELETE", ""},
	}
	for _, a := range attempts {
		var body []byte
		if a.body != "" {
			body = []byte(a.body)
		}
		if r := bob.do(a.method, sid, body, nil); r.status != http.StatusNotFound {
			t.Errorf("bob's %s %.60s on alice's session: status %d, want 404", a.method, a.body, r.status)
		}
	}
	// Alice's session and notes are intact, and her worker never saw bob's requests.
	r = alice.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_note","arguments":{"name":"diary"}}}`), nil)
	if r.status != 200 || !strings.Contains(string(r.body), "alice only") || strings.Contains(string(r.body), marker) {
		t.Errorf("alice's read_note after the hijack attempts: status %d, body %s", r.status, r.body)
	}
	noneReachedTheWorker(t, g, marker)
	// Bob's two tools/calls are audited as his, refused, with no worker: every tools/call has its
	// audit line (docs/operations.md), and a hijack attempt is one an auditor wants to see.
	bobs := 0
	for _, ev := range g.logEvents("audit tools/call") {
		switch {
		case ev["user"] == "bob":
			bobs++
			if ev["outcome"] != "refused" || ev["worker"] != nil || ev["tool"] != "" {
				t.Errorf("bob's audit line: %v, want outcome refused, no worker, no tool", ev)
			}
		case ev["user"] != "alice" || ev["session"] != sid:
			t.Errorf("audit line neither alice's nor bob's refused attempt: %v", ev)
		}
	}
	if bobs != 2 {
		t.Errorf("%d audit lines of bob's, want 2 (his two tools/calls)", bobs)
	}
	if n := g.workers(); n != 1 {
		t.Errorf("gemgate has %d workers, want 1 (alice's)", n)
	}
}

var (
	testdataMu   sync.Mutex
	testdataBins = map[string]string{}
)

// buildTestdata builds the helper program test/testdata/<name> once per run.
func buildTestdata(t *testing.T, name string) string {
	t.Helper()
	return buildOnce(t, name, "./testdata/"+name)
}

// buildOnce builds the Go package pkg as the program name, once per run: a build costs
// seconds of both cores, and parallel tests would otherwise each pay it.
func buildOnce(t *testing.T, name, pkg string) string {
	t.Helper()
	testdataMu.Lock()
	defer testdataMu.Unlock()
	if bin, ok := testdataBins[name]; ok {
		return bin
	}
	bin := filepath.Join(filepath.Dir(gemgateBin), name)
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	testdataBins[name] = bin
	return bin
}

// envReport is what testdata/credworker's "env" tool answers.
type envReport struct {
	GemgateEnv          []string `json:"gemgate_env"`
	User                string   `json:"user"`
	CredentialSet       bool     `json:"credential_set"`
	CredentialLen       int      `json:"credential_len"`
	CredentialSHA256    string   `json:"credential_sha256"`
	CredentialInCmdline bool     `json:"credential_in_cmdline"`
	Aud                 any      `json:"aud"`
	Sub                 string   `json:"sub"`
	ActSub              string   `json:"act_sub"`
}

var jwtLike = regexp.MustCompile(`[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)

// checkExchangedCredential calls the credworker's env tool as a client holding token and
// checks that an exchanged credential for exchangeClient reached the worker's environment
// and no log line.
func checkExchangedCredential(t *testing.T, g *gemgate, token, exchangeClient string) {
	t.Helper()
	cs := connect(t, g.URL, token, nil)
	var rep envReport
	if err := json.Unmarshal([]byte(text(callTool(t, cs, "env", nil))), &rep); err != nil {
		t.Fatalf("env tool: %v", err)
	}
	if !rep.CredentialSet {
		t.Fatalf("GEMGATE_CREDENTIAL is not set in the worker: %+v", rep)
	}
	if rep.Aud != "gemstone" && !slices.Contains(toStrings(rep.Aud), "gemstone") {
		t.Errorf("credential aud %v, want gemstone", rep.Aud)
	}
	if rep.Sub != "alice" || rep.User != "alice" || rep.ActSub != exchangeClient {
		t.Errorf("credential sub %q act.sub %q, worker user %q; want alice, %s, alice", rep.Sub, rep.ActSub, rep.User, exchangeClient)
	}
	if rep.CredentialInCmdline {
		t.Error("the credential is on the worker's command line")
	}
	if slices.Contains(rep.GemgateEnv, "GEMGATE_EXCHANGE_CLIENT_SECRET") {
		t.Errorf("the gateway's exchange secret reached the worker: %v", rep.GemgateEnv)
	}
	logs := g.logs.String()
	for _, tok := range jwtLike.FindAllString(logs, -1) {
		sum := sha256.Sum256([]byte(tok))
		if hex.EncodeToString(sum[:]) == rep.CredentialSHA256 {
			t.Fatal("the worker credential appears in gemgate's log")
		}
		t.Errorf("a JWT-shaped string appears in gemgate's log: %.24s...", tok)
	}
	if strings.Contains(logs, token) {
		t.Error("the client's token appears in gemgate's log")
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func randomSecret(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestTokenExchangeServe runs gemgate serve against an in-process development issuer that
// knows gemgate's exchange client.
func TestTokenExchangeServe(t *testing.T) {
	t.Parallel()
	secret := randomSecret(t)
	const resource = "urn:gemgate:e2e"
	iss, err := devissuer.Start(devissuer.Options{
		Audience: resource, ExchangeAudiences: []string{"gemstone"},
		Clients: []devissuer.Client{{ID: "gemgate", Secret: secret, User: "gemgate", Scopes: []string{"mcp:use"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	g := startServeEnv(t, []string{"GEMGATE_EXCHANGE_CLIENT_SECRET=" + secret}, "--issuer", iss.URL(), "--audiences", resource,
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker"),
		"--worker-credential", "exchange", "--exchange-client-id", "gemgate", "--exchange-audience", "gemstone")
	token, err := iss.Mint("alice", []string{"mcp:use", "mcp:write"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	checkExchangedCredential(t, g, token, "gemgate")
}

// TestTokenExchangeDev: gemgate dev brings its own exchange client ("gemgate") at its
// development issuer, so `--worker-credential exchange` needs nothing else.
func TestTokenExchangeDev(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker", "command", "--worker-command", buildTestdata(t, "credworker"),
		"--worker-credential", "exchange")
	checkExchangedCredential(t, g, g.Tokens["alice"], "gemgate")
}
