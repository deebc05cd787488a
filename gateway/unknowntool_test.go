package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
)

// A tool that does not exist is the worker's "unknown tool", whatever the session may call:
// a scope challenge for it would send a client into a needless re-login over a typo.
func TestUnknownToolIsNotAScopeChallenge(t *testing.T) {
	pol, err := policy.New(policy.Config{
		ReadOnlyTools: demoReadOnlyTools,
		Rules:         []policy.Rule{{Scope: "notes:admin", Tools: []string{"delete_*"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Policy = pol })
	ro := f.client("alice-ro")
	ro.open()
	rw := f.client("alice-rw")
	rw.open()
	for _, tc := range []struct {
		who  *client
		tool string
	}{{ro, "nope"}, {rw, "delete_nope"}, {ro, "delete_nope"}} {
		r := tc.who.callTool("3", tc.tool, map[string]any{})
		if r.status != http.StatusOK || r.header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s: status %d, challenge %q; want 200 and none", tc.tool, r.status, r.header.Get("WWW-Authenticate"))
			continue
		}
		e := rpcError(t, r.only(t))
		if e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(e.Message, `unknown tool "`+tc.tool+`"`) {
			t.Errorf("%s: error %d %q, want -32602 unknown tool", tc.tool, e.Code, e.Message)
		}
	}
	// A real tool the session may not call is still refused with a challenge, which now says
	// which tool and why, in the JSON-RPC error and in the challenge alike.
	r := ro.callTool("4", "write_note", map[string]any{"name": "n", "text": "x"})
	forbiddenBody(t, r, "4", "readOnly")
	msg := rpcError(t, r.only(t)).Message
	ch := r.header.Get("WWW-Authenticate")
	for _, want := range []string{"write_note", "read-only", "mcp:write"} {
		if !strings.Contains(msg, want) || !strings.Contains(ch, want) {
			t.Errorf("403 does not say %q: message %q, challenge %q", want, msg, ch)
		}
	}
	r = rw.callTool("5", "delete_note", map[string]any{"name": "n"})
	forbiddenBody(t, r, "5", "forbidden")
	msg = rpcError(t, r.only(t)).Message
	if !strings.Contains(msg, "delete_note") || !strings.Contains(msg, "notes:admin") {
		t.Errorf("forbidden tool's message %q names neither the tool nor the scope", msg)
	}
}
