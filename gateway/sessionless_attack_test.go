package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

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
