package test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rulesConfig has one rule of each kind docs/configuration.md shows, over the demo worker:
// write_note for the editors group, delete_note for the admin role, destructive tools only
// with a second scope, and a claim every token must carry. One rule tries to open
// everything to read-only sessions; no rule can. The last keeps a tool for read-write tokens.
const rulesConfig = `
trust_read_only_hints: true
extra_scopes: [notes:admin]
tool_rules:
  - name: editors-write
    tools: [write_note]
    allow: '"editors" in groups'
  - name: admins-delete
    tools: [delete_note]
    allow: '"admin" in roles'
  - name: destructive-second-scope
    allow: 'annotations.readOnlyHint || !annotations.destructiveHint || "notes:admin" in scopes'
  - name: tenant
    allow: 'claims.tenant == "acme"'
  - name: try-to-widen
    allow: 'read_only || true'
  - name: search-for-writers
    tools: [search_notes]
    allow: '!read_only'
`

// ruleCaller is a token for one era's raw client.
type ruleCaller struct {
	t       *testing.T
	url     string
	token   string
	session string // "" for 2026-07-28
}

// call sends one request in the caller's era and returns the HTTP status, the
// WWW-Authenticate header and the JSON-RPC answer.
func (c *ruleCaller) call(method string, params map[string]any) (int, string, map[string]json.RawMessage) {
	c.t.Helper()
	if c.session == "" {
		status, out := sessionlessPostHeader(c.t, c.url, c.token, method, params)
		return status.code, status.challenge, out
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return rulesDo(c.t, req)
}

type httpOutcome struct {
	code      int
	challenge string
}

func sessionlessPostHeader(t *testing.T, url, token, method string, params map[string]any) (httpOutcome, map[string]json.RawMessage) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": method, "params": params})
	name, _ := params["name"].(string)
	code, challenge, out := rulesDo(t, sessionlessRequest(t, url, token, body, method, name))
	return httpOutcome{code, challenge}, out
}

func rulesDo(t *testing.T, req *http.Request) (int, string, map[string]json.RawMessage) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), out
}

// openLegacy opens a 2025-11-25 session for token.
func openLegacy(t *testing.T, url, token string) string {
	t.Helper()
	session, _ := legacyPost(t, url, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rules","version":"1"}}}`)
	if session == "" {
		t.Fatal("no session id")
	}
	legacyPost(t, url, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return session
}

// listedTools is the names a tools/list answer lists, and its _meta explanation.
func listedTools(t *testing.T, c *ruleCaller) ([]string, string) {
	t.Helper()
	_, _, out := c.call("tools/list", map[string]any{})
	var res struct {
		Tools []struct{ Name string }
		Meta  map[string]map[string]string `json:"_meta"`
	}
	if err := json.Unmarshal(out["result"], &res); err != nil {
		t.Fatalf("tools/list: %s", out["result"])
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, res.Meta["gemgate/hidden"]["explanation"]
}

// Each kind of rule allows and denies through the real binary, in both eras: tools/list
// shows what tools/call allows; a refused call gets the 403 challenge when a scope would
// unlock it and the unknown-tool error otherwise; the audit line names the rule; a
// read-only token is refused whatever its claims and whatever the rules say.
func TestRulesBothEras(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	cfg := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(cfg, []byte(rulesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startServe(t, "--issuer", iss.URL(), "--worker", "demo", "--config", cfg)
	mint := func(sub, scope string, extra map[string]any) string {
		return iss.mint(with(iss.claims(g.URL, sub, scope), func(c map[string]any) {
			c["tenant"] = "acme"
			for k, v := range extra {
				c[k] = v
			}
		}))
	}
	rw := "mcp:use mcp:write"
	editors := map[string]any{"groups": []any{"editors"}}
	admin := map[string]any{"realm_access": map[string]any{"roles": []any{"admin"}}}
	tokens := map[string]string{
		"carol": mint("carol", rw, editors),
		"dave":  mint("dave", rw, nil),
		"erin":  mint("erin", rw+" notes:admin", admin),
		"frank": mint("frank", rw, admin),
		"bob":   mint("bob", "mcp:use notes:admin", map[string]any{"groups": []any{"editors"}, "realm_access": admin["realm_access"]}),
		"gina":  iss.mint(iss.claims(g.URL, "gina", rw)), // no tenant claim: the rule fails, and denies
	}
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			as := func(user string) *ruleCaller {
				c := &ruleCaller{t: t, url: g.URL, token: tokens[user]}
				if era != "2026-07-28" {
					c.session = openLegacy(t, g.URL, c.token)
				}
				return c
			}
			write := map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n-" + era, "text": "x"}}
			del := map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n-" + era}}
			allowed := func(who string, c *ruleCaller, params map[string]any) {
				t.Helper()
				status, _, out := c.call("tools/call", params)
				if status != 200 || out["error"] != nil {
					t.Errorf("%s %s: %d %s", who, params["name"], status, out["error"])
				}
			}
			unknown := func(who string, c *ruleCaller, params map[string]any) {
				t.Helper()
				status, _, out := c.call("tools/call", params)
				if !strings.Contains(string(out["error"]), "unknown tool") || (status != 200 && status != 400) {
					t.Errorf("%s %s: %d %s; want unknown tool", who, params["name"], status, out["error"])
				}
			}
			challenged := func(who string, c *ruleCaller, params map[string]any, scope, kind string) {
				t.Helper()
				status, challenge, out := c.call("tools/call", params)
				if status != 403 || !strings.Contains(challenge, scope) || !strings.Contains(string(out["error"]), kind) {
					t.Errorf("%s %s: %d %q %s; want 403 asking for %s (%s)", who, params["name"], status, challenge, out["error"], scope, kind)
				}
			}

			carol, dave, erin, frank, bob, gina := as("carol"), as("dave"), as("erin"), as("frank"), as("bob"), as("gina")
			// group-based write access
			allowed("carol", carol, write)
			unknown("dave", dave, write)
			// a tool only for one role, destructive only with a second scope
			allowed("erin", erin, del)
			challenged("frank", frank, del, "notes:admin", "forbidden")
			unknown("carol", carol, del)
			// read-only: no rule lifts the gate, whatever the token's groups, roles and scopes
			challenged("bob", bob, write, "mcp:write", "readOnly")
			challenged("bob", bob, del, "mcp:write", "readOnly")
			allowed("bob", bob, map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}})
			// a rule that reads read_only refuses as the read-only gate does: the write scope
			// would unlock the tool, and the challenge says so
			search := map[string]any{"name": "search_notes", "arguments": map[string]any{"query": "x"}}
			challenged("bob", bob, search, "mcp:write", "readOnly")
			allowed("carol", carol, search)

			for who, want := range map[string][2]bool{"carol": {true, false}, "dave": {false, false}, "erin": {false, true}, "bob": {false, false}} {
				names, _ := listedTools(t, map[string]*ruleCaller{"carol": carol, "dave": dave, "erin": erin, "bob": bob}[who])
				if strings.Contains(strings.Join(names, ","), "write_note") != want[0] || strings.Contains(strings.Join(names, ","), "delete_note") != want[1] {
					t.Errorf("%s lists %v; want write_note %v, delete_note %v", who, names, want[0], want[1])
				}
			}
			names, why := listedTools(t, gina)
			if len(names) != 0 || !strings.Contains(why, "rule tenant") {
				t.Errorf("gina lists %v, explanation %q; want none, and why", names, why)
			}
			unknown("gina", gina, map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}})
		})
	}
	pollUntil(t, 10e9, "the audit lines naming the rules", func() bool {
		logs := g.logs.String()
		return strings.Count(logs, `"decided_by":"rule editors-write"`) >= 2 &&
			strings.Count(logs, `"decided_by":"rule destructive-second-scope"`) >= 2 &&
			strings.Count(logs, `"decided_by":"rule admins-delete"`) >= 2
	})
}

// gemgate check reports a rule that does not compile with its position, and check --token
// --tools says for a token which tools it may use and which rule decided.
func TestRulesCheck(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("tool_rules:\n  - name: broken\n    allow: '\"editors\" in group'\n"), 0o600)
	out, err := exec.Command(gemgateBin, "check", "--config", bad, "--issuer", iss.URL(), "--allow-insecure-http", "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "rules[0] (broken).allow: ERROR: <input>:1:14: undeclared reference to 'group'") {
		t.Errorf("check with a broken rule: %v\n%s", err, out)
	}

	// The example of docs/configuration.md, "Tool rules", is a valid configuration.
	doc, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, example, _ := strings.Cut(string(doc), "```yaml\ntrust_read_only_hints: true       # rules may read annotations")
	example, _, _ = strings.Cut(example, "```")
	if example == "" {
		t.Fatal("docs/configuration.md has no tool rules example")
	}
	docCfg := filepath.Join(dir, "doc.yaml")
	os.WriteFile(docCfg, []byte("trust_read_only_hints: true"+example), 0o600)
	out, _ = exec.Command(gemgateBin, "check", "--config", docCfg, "--issuer", iss.URL(), "--allow-insecure-http", "--listen", "127.0.0.1:0").CombinedOutput()
	if !strings.Contains(string(out), "OK       configuration is valid") {
		t.Errorf("check with the docs' example:\n%s", out)
	}
	// And that of "Prompt and resource rules".
	_, example, _ = strings.Cut(string(doc), "```yaml\nextra_scopes: [hr:read]\nprompt_rules:")
	example, _, _ = strings.Cut(example, "```")
	if example == "" {
		t.Fatal("docs/configuration.md has no prompt rules example")
	}
	os.WriteFile(docCfg, []byte("extra_scopes: [hr:read]\nprompt_rules:"+example), 0o600)
	out, _ = exec.Command(gemgateBin, "check", "--config", docCfg, "--issuer", iss.URL(), "--allow-insecure-http", "--listen", "127.0.0.1:0").CombinedOutput()
	if !strings.Contains(string(out), "OK       configuration is valid") {
		t.Errorf("check with the docs' prompt and resource example:\n%s", out)
	}

	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(rulesConfig), 0o600)
	tools := filepath.Join(dir, "tools.json")
	os.WriteFile(tools, []byte(`{"tools":[{"name":"write_note","annotations":{"destructiveHint":false}},{"name":"delete_note","annotations":{"destructiveHint":true}},{"name":"echo","annotations":{"readOnlyHint":true}}]}`), 0o600)
	tok := iss.mint(with(iss.claims("http://127.0.0.1:8080/mcp", "carol", "mcp:use mcp:write"), func(c map[string]any) {
		c["tenant"], c["groups"] = "acme", []any{"editors"}
	}))
	out, err = exec.Command(gemgateBin, "check", "--config", good, "--issuer", iss.URL(), "--allow-insecure-http", "--token", tok, "--tools", tools).CombinedOutput()
	for _, want := range []string{"ALLOWED  write_note", "HIDDEN   delete_note                      rule admins-delete", "ALLOWED  echo                             read-write token"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("check --token --tools: %v; lacks %q:\n%s", err, want, out)
		}
	}

	// A saved prompts/list or resources/list answer: which prompts and resources, by the
	// prompt and resource rules.
	items := filepath.Join(dir, "items.yaml")
	os.WriteFile(items, []byte(promptRulesConfig), 0o600)
	for list, wants := range map[string][]string{
		`{"prompts":[{"name":"test_simple_prompt"},{"name":"summarize"}]}`: {
			"HIDDEN   test_simple_prompt               rule simple-for-reviewers", "ALLOWED  summarize                        reading is not a change"},
		`{"resources":[{"uri":"test://static-binary"},{"uri":"test://static-text"}],"nextCursor":"2"}`: {
			"HIDDEN   test://static-binary             rule binary-for-admins", "ALLOWED  test://static-text               reading is not a change"},
	} {
		file := filepath.Join(dir, "list.json")
		os.WriteFile(file, []byte(list), 0o600)
		out, err = exec.Command(gemgateBin, "check", "--config", items, "--issuer", iss.URL(), "--allow-insecure-http", "--token", tok, "--tools", file).CombinedOutput()
		for _, want := range wants {
			if err != nil || !strings.Contains(string(out), want) {
				t.Errorf("check --token --tools with %s: %v; lacks %q:\n%s", list, err, want, out)
			}
		}
	}
}
