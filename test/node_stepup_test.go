package test

import (
	"strings"
	"testing"
)

// The TypeScript SDK client steps up within one session against the dev issuer (ts-stepup.mjs):
// as alice with scope mcp:use it gets a read-only session and write_note is refused with 403
// insufficient_scope. The SDK's own upscoping re-requests the provider's configured scope for
// client_credentials, so it fetches another read-only token and fails; the script then widens
// the provider's scope, runs the SDK's auth() itself, and write_note succeeds on the same
// session id, now served by alice's read-write worker, and the SDK receives gemgate's
// notifications/tools/list_changed on its GET stream.
func TestTypeScriptClientStepUp(t *testing.T) {
	t.Parallel()
	needNodeModules(t)
	g := startDev(t)
	var secret string
	for _, c := range g.Clients {
		if c.ID == "alice" {
			secret = c.Secret
		}
	}
	if secret == "" {
		t.Fatal("gemgate dev printed no client alice")
	}
	run := runNode(t, systemNode(t), "ts-stepup.mjs", []string{"GEMGATE_CLIENT_SECRET=" + secret},
		"--url", g.URL, "--issuer", g.Issuer, "--client-id", "alice")
	checkStepUpReport(t, g, run, "alice")
}

// checkStepUpReport checks what ts-stepup.mjs reports: one session throughout, read-only
// before and read-write after for user, the SDK's own upscoping asking for the provider's
// scope only, the script's re-authorization for both, and list_changed after the step-up.
func checkStepUpReport(t *testing.T, g *gemgate, run nodeRun, user string) {
	t.Helper()
	checkNodeReport(t, g, run)

	before, _ := run.report["session_before"].(string)
	after, _ := run.report["session_after"].(string)
	if before == "" || before != after {
		t.Errorf("session id (hashed) before the step-up %q, after %q: want the same, not empty", before, after)
	}
	if opened := len(g.logEvents("session opened")); opened != 1 {
		t.Errorf("gemgate opened %d sessions, want 1: the step-up must keep the session", opened)
	}
	for key, want := range map[string]string{"whoami_before": "read_only=true", "whoami_after": "read_only=false"} {
		if w, _ := run.report[key].(string); !strings.Contains(w, "user="+user+" ") || !strings.Contains(w, want) {
			t.Errorf("%s = %q, want %s and %s", key, w, user, want)
		}
	}
	sdk, _ := run.report["sdk_upscoping"].(map[string]any)
	if scopes := nodeStrings(sdk["token_scopes"]); len(scopes) != 1 || scopes[0] != "mcp:use" {
		t.Errorf("the SDK's upscoping token requests asked for %v, want one for mcp:use (the provider's scope)", scopes)
	}
	t.Logf("whoami after: %v; list_changed notifications: %v", run.report["whoami_after"], run.report["list_changed"])
	if n, _ := run.report["list_changed"].(float64); n < 1 {
		t.Errorf("the client got %v notifications/tools/list_changed after the step-up, want at least 1", run.report["list_changed"])
	}
	re, _ := run.report["reauthorize"].(map[string]any)
	if scopes := nodeStrings(re["token_scopes"]); len(scopes) != 1 || scopes[0] != "mcp:use mcp:write" {
		t.Errorf("the script's re-authorization asked for %v, want mcp:use mcp:write", scopes)
	}
}
