package test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// promptRulesConfig restricts the go-sdk everything-server's prompts and resources: a prompt
// for one group, a prompt and a resource template behind a scope, a resource for one role.
const promptRulesConfig = `
extra_scopes: [prompts:extra, files:extra]
prompt_rules:
  - name: simple-for-reviewers
    prompts: [test_simple_prompt]
    allow: '"reviewers" in groups'
  - name: arguments-need-scope
    prompts: [test_prompt_with_arguments]
    scope: prompts:extra
resource_rules:
  - name: binary-for-admins
    uris: ["test://static-binary"]
    allow: '"admin" in roles'
  - name: template-needs-scope
    uris: ["test://template/*/data"]
    scope: files:extra
`

// itemCaller sends one era's requests as one token: a 2025-11-25 session's, or sessionless
// 2026-07-28 requests (Mcp-Name is the prompt's name or the resource's URI).
type itemCaller struct {
	t       *testing.T
	url     string
	token   string
	session string
}

func (c *itemCaller) call(method string, params map[string]any) (int, string, map[string]json.RawMessage) {
	c.t.Helper()
	if c.session != "" {
		rc := &ruleCaller{t: c.t, url: c.url, token: c.token, session: c.session}
		return rc.call(method, params)
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": method, "params": params})
	name, _ := params["name"].(string)
	if uri, ok := params["uri"].(string); ok {
		name = uri
	}
	return rulesDo(c.t, sessionlessRequest(c.t, c.url, c.token, body, method, name))
}

// listed is what a list answer lists: the names (URIs, URI templates) under its array.
func (c *itemCaller) listed(method, array, key string) ([]string, string) {
	c.t.Helper()
	status, _, out := c.call(method, map[string]any{})
	var res map[string]json.RawMessage
	if err := json.Unmarshal(out["result"], &res); status != 200 || err != nil {
		c.t.Fatalf("%s: %d %s", method, status, bytes.Join([][]byte{out["result"], out["error"]}, nil))
	}
	var items []map[string]any
	json.Unmarshal(res[array], &items)
	var names []string
	for _, it := range items {
		names = append(names, it[key].(string))
	}
	var meta map[string]map[string]string
	json.Unmarshal(res["_meta"], &meta)
	return names, meta["gemgate/hidden"]["explanation"]
}

// Prompt and resource rules through the real binary, in both eras, with a worker that speaks
// 2026-07-28 and one that speaks only 2025-11-25 (the bridge): each rule allows and denies;
// a hidden prompt or resource is absent from its list and refused on get, read and
// subscribe, with the 403 challenge when a scope would unlock it and the era's not-found
// error otherwise; a read-only token keeps what no rule takes; the audit line names the rule.
func TestPromptAndResourceRulesBothEras(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	cfg := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(cfg, []byte(promptRulesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, w := range confWorkers(t) {
		t.Run(w.Name, func(t *testing.T) {
			g := startServe(t, "--issuer", iss.URL(), "--worker", "command", "--worker-command", w.Bin, "--config", cfg)
			mint := func(sub, scope string, extra map[string]any) string {
				return iss.mint(with(iss.claims(g.URL, sub, scope), func(c map[string]any) {
					for k, v := range extra {
						c[k] = v
					}
				}))
			}
			// reader is read-only, in the group; admin is read-only too, with the role and
			// both scopes, and not in the group.
			reader := mint("reader", "mcp:use", map[string]any{"groups": []any{"reviewers"}})
			admin := mint("admin", "mcp:use prompts:extra files:extra", map[string]any{"realm_access": map[string]any{"roles": []any{"admin"}}})
			for _, era := range []string{"2025-11-25", "2026-07-28"} {
				t.Run(era, func(t *testing.T) {
					as := func(token string) *itemCaller {
						c := &itemCaller{t: t, url: g.URL, token: token}
						if era != "2026-07-28" {
							c.session = openLegacy(t, g.URL, token)
						}
						return c
					}
					checkItemRules(t, era, as(reader), as(admin))
				})
			}
			defer func() {
				if t.Failed() {
					for _, l := range strings.Split(g.logs.String(), "\n") {
						if strings.Contains(l, "audit") {
							t.Log(l)
						}
					}
				}
			}()
			pollUntil(t, 10e9, "the audit lines naming the rules", func() bool {
				logs := g.logs.String()
				return strings.Count(logs, `"decided_by":"rule simple-for-reviewers"`) >= 2 &&
					strings.Count(logs, `"decided_by":"rule arguments-need-scope"`) >= 2 &&
					strings.Count(logs, `"decided_by":"rule binary-for-admins"`) >= 3 &&
					strings.Count(logs, `"decided_by":"rule template-needs-scope"`) >= 2 &&
					strings.Count(logs, `"msg":"audit prompts/get"`) >= 4 && strings.Count(logs, `"msg":"audit resources/read"`) >= 4 &&
					strings.Count(logs, `"msg":"audit resources/subscribe"`) >= 2 &&
					strings.Contains(logs, `"prompt":"test_simple_prompt","read_only":true,"outcome":"forbidden"`) &&
					strings.Contains(logs, `"resource":"test://static-binary","read_only":true,"outcome":"forbidden"`) &&
					strings.Count(logs, `"outcome":"refused","decided_by":"a URI with a '..' segment"`) >= 2
			})
		})
	}
}

func checkItemRules(t *testing.T, era string, reader, admin *itemCaller) {
	sessionless := era == "2026-07-28"
	ok := func(who string, c *itemCaller, method string, params map[string]any) {
		t.Helper()
		if status, _, out := c.call(method, params); status != 200 || out["error"] != nil || out["result"] == nil {
			t.Errorf("%s %s %v: %d %s", who, method, params, status, out["error"])
		}
	}
	notFound := func(who string, c *itemCaller, method string, params map[string]any, code string) {
		t.Helper()
		status, _, out := c.call(method, params)
		wantStatus := 200
		if sessionless {
			wantStatus, code = 400, "-32602"
		}
		if status != wantStatus || !strings.Contains(string(out["error"]), `"code":`+code) {
			t.Errorf("%s %s %v: %d %s; want %d, code %s", who, method, params, status, out["error"], wantStatus, code)
		}
	}
	challenged := func(who string, c *itemCaller, method string, params map[string]any, scope string) {
		t.Helper()
		status, challenge, out := c.call(method, params)
		if status != 403 || !strings.Contains(challenge, scope) || !strings.Contains(string(out["error"]), `"kind":"forbidden"`) {
			t.Errorf("%s %s %v: %d %q %s; want 403 asking for %s", who, method, params, status, challenge, out["error"], scope)
		}
	}
	has := func(who string, got []string, want, not string) {
		t.Helper()
		if !slices.Contains(got, want) || slices.Contains(got, not) {
			t.Errorf("%s lists %v; want %s and not %s", who, got, want, not)
		}
	}

	simple := map[string]any{"name": "test_simple_prompt"}
	args := map[string]any{"name": "test_prompt_with_arguments", "arguments": map[string]any{"arg1": "a", "arg2": "b"}}
	// A prompt for one group: the group's read-only token lists and gets it (reading is no
	// change); another token neither, and learns nothing of it (no scope would unlock it).
	prompts, _ := reader.listed("prompts/list", "prompts", "name")
	has("reader", prompts, "test_simple_prompt", "test_prompt_with_arguments")
	ok("reader", reader, "prompts/get", simple)
	notFound("admin", admin, "prompts/get", simple, "-32602")
	// A prompt behind a scope: 403 asking for it; with it, allowed.
	prompts, _ = admin.listed("prompts/list", "prompts", "name")
	has("admin", prompts, "test_prompt_with_arguments", "test_simple_prompt")
	challenged("reader", reader, "prompts/get", args, "prompts:extra")
	ok("admin", admin, "prompts/get", args)

	// A resource for one role, a template behind a scope.
	binary := map[string]any{"uri": "test://static-binary"}
	item := map[string]any{"uri": "test://template/42/data"}
	resources, _ := reader.listed("resources/list", "resources", "uri")
	has("reader", resources, "test://static-text", "test://static-binary")
	ok("reader", reader, "resources/read", map[string]any{"uri": "test://static-text"})
	notFound("reader", reader, "resources/read", binary, "-32002")
	if !sessionless {
		notFound("reader", reader, "resources/subscribe", binary, "-32002")
	} else {
		// A listen stream's subscription passes the gate a resources/subscribe does.
		notFound("reader", reader, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"test://static-binary"}}}, "")
	}
	// A URI a worker may resolve to another resource than its text names is refused before
	// any rule reads it, with one text in both eras, whoever asks.
	for _, uri := range []string{"test://template/42/../../static-binary", "test://static%2Dbinary", "test://x//static-binary"} {
		status, _, out := admin.call("resources/read", map[string]any{"uri": uri})
		wantStatus := 200
		if sessionless {
			wantStatus = 400
		}
		var e struct {
			Code    int
			Message string
		}
		json.Unmarshal(out["error"], &e)
		if status != wantStatus || e.Code != -32602 || !strings.HasPrefix(e.Message, "resource URI ") ||
			!strings.HasSuffix(e.Message, "another resource than the resource rules decide on; send the URI in its normal form (RFC 3986 §6.2.2)") {
			t.Errorf("admin resources/read %s: %d %s; want %d, -32602 asking for the normal form", uri, status, out["error"], wantStatus)
		}
	}
	resources, _ = admin.listed("resources/list", "resources", "uri")
	has("admin", resources, "test://static-binary", "")
	ok("admin", admin, "resources/read", binary)
	templates, why := reader.listed("resources/templates/list", "resourceTemplates", "uriTemplate")
	if len(templates) != 0 || !strings.Contains(why, "hides all 1 resource templates") || !strings.Contains(why, "rule template-needs-scope") {
		t.Errorf("reader's templates: %v, %q", templates, why)
	}
	challenged("reader", reader, "resources/read", item, "files:extra")
	templates, _ = admin.listed("resources/templates/list", "resourceTemplates", "uriTemplate")
	has("admin", templates, "test://template/{id}/data", "")
	ok("admin", admin, "resources/read", item)
}
