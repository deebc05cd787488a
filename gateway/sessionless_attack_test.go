package gateway

import (
	"encoding/json"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// A hostile client's request to a sessionless worker, through every check gemgate makes
// before passMessage: a case variant of the client capabilities' tasks (or of extensions,
// which holds the tasks extension) is let through and forwarded, although gemgate refuses a
// case variant of the task parameter itself because "a worker reading keys without regard
// to case would take a variant it let through for the real one" (bridge_resume.go). Such a
// worker then answers with a task gemgate refuses as malformed, while the tool runs on.
func TestAttackPassMessageTasksCapabilityInAnotherCase(t *testing.T) {
	for name, caps := range map[string]string{
		"Tasks":      `{"Tasks":{}}`,
		"Extensions": `{"Extensions":{"io.modelcontextprotocol/tasks":{}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{` +
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
				`,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`
			msg, err := jsonrpc.Parse([]byte(body), jsonrpc.Options{Client: true})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			r.Header.Set(sessionless.HeaderProtocolVersion, sessionless.Version)
			r.Header.Set(sessionless.HeaderMethod, "tools/call")
			r.Header.Set(sessionless.HeaderName, "slow")
			// A refusal at any check before passMessage would be the fix: the attack ends there.
			if _, he := sessionless.Check(r, msg, servedVersions); he != nil {
				return
			}
			if _, he := readClientFields(msg); he != nil {
				return
			}
			if _, _, err := requestStateOf(msg); err != nil {
				return
			}
			out, err := passMessage(msg, false, "")
			if err != nil {
				return // refused: holds
			}
			p := strings.ToLower(string(out.Params))
			if strings.Contains(p, `"tasks"`) || strings.Contains(p, tasksExtension) {
				t.Errorf("a case variant of the tasks capability reached the sessionless worker: %s", out.Params)
			}
		})
	}
}

// A call parked by the input-required bridge (a legacy worker program) is resumed by a retry
// whose token no longer carries the scope a policy rule requires for the tool: only the
// access mode is bound by the state, the policy is not decided again. The retry of a
// sessionless worker's input-required result is decided again (toolGate), so the two
// kinds of worker disagree on what a retry needs.
func TestAttackBridgeRetryWithoutRuleScope(t *testing.T) {
	pol, err := policy.New(policy.Config{
		ReadOnlyTools: demoReadOnlyTools,
		Rules:         []policy.Rule{{Scope: "notes:admin", Tools: []string{"delete_note"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	toks := testTokens{
		"alice-admin": {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:use", "mcp:write", "notes:admin"}},
		"alice-rw":    {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:use", "mcp:write"}},
	}
	f := newFixture(t, func(o *Options) {
		o.Policy = pol
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{Verifier: toks, ResourceMetadataURL: resourceMetadata, RequiredScopes: pol.RequiredScopes()})
		o.Authenticate, o.InsufficientScope = authn.Middleware, authn.InsufficientScope
	})
	admin, plain := f.client("alice-admin"), f.client("alice-rw")
	meta := func() map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
		return m
	}
	if r := admin.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	// Without the rule's scope, delete_note is refused outright.
	if r := plain.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta()}); r.status != http.StatusForbidden {
		t.Fatalf("delete_note without notes:admin: %d %s, want 403", r.status, r.body)
	}
	r := admin.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta()})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("delete_note by the admin: %s", r.body)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	r = plain.sessionless("4", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta(),
		"inputResponses": responses, "requestState": res.RequestState})
	if r.status != http.StatusForbidden {
		t.Errorf("retry with a token without notes:admin: %d %s, want 403 insufficient_scope", r.status, r.body)
	}
	if r := admin.sessionless("5", "tools/call", map[string]any{"name": "read_note", "arguments": map[string]any{"name": "n"}}); r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Errorf("the note was deleted by a retry without the rule's scope: %s", r.body)
	}
}
