package gateway

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/pool"
)

// The same refused call gets the same refusal in both eras: a read-only token calling a tool
// that changes state meets 403 with the same text, error kind and challenge on a session and
// as a 2026-07-28 request; an unknown tool is named alike, a JSON-RPC error (200) on a session
// and 400 sessionless.
func TestRefusalTextIsTheSameInBothEras(t *testing.T) {
	f := newSessionlessFixture(t)
	legacy := f.client("alice-ro")
	legacy.open()
	noSession := f.client("alice-ro")
	for _, tc := range []struct {
		tool                            string
		legacyStatus, sessionlessStatus int
	}{
		{"write_note", http.StatusForbidden, http.StatusForbidden},
		{"no_such_tool", http.StatusOK, http.StatusBadRequest},
	} {
		args := map[string]any{"name": "n", "text": "x"}
		l := legacy.callTool("2", tc.tool, args)
		m := noSession.sessionless("3", "tools/call", map[string]any{"name": tc.tool, "arguments": args})
		if l.status != tc.legacyStatus || m.status != tc.sessionlessStatus {
			t.Fatalf("%s: status %d on a session, %d sessionless; want %d and %d\n%s\n%s",
				tc.tool, l.status, m.status, tc.legacyStatus, tc.sessionlessStatus, l.body, m.body)
		}
		le, me := rpcError(t, l.only(t)), rpcError(t, m.only(t))
		if le.Message != me.Message || le.Code != me.Code || !reflect.DeepEqual(le.Data, me.Data) {
			t.Errorf("%s: a session's refusal %d %q %v, a sessionless one %d %q %v; want the same",
				tc.tool, le.Code, le.Message, le.Data, me.Code, me.Message, me.Data)
		}
		// The refusal says what works: a token with the write scope, on this very session,
		// got by authorizing again (a refresh grant cannot widen a token's scope).
		if tc.tool == "write_note" {
			for _, want := range []string{"a token with scope mcp:write may call it", "on this session too", "re-authorize"} {
				if !strings.Contains(le.Message, want) || !strings.Contains(l.header.Get("WWW-Authenticate"), want) {
					t.Errorf("write_note refusal %q (challenge %q) does not say %q", le.Message, l.header.Get("WWW-Authenticate"), want)
				}
			}
		}
		if lc, mc := l.header.Get("WWW-Authenticate"), m.header.Get("WWW-Authenticate"); lc != mc {
			t.Errorf("%s: challenge %q on a session, %q sessionless", tc.tool, lc, mc)
		}
	}
}

// A token without a required scope is refused 403 in both eras: by the authenticator in
// front, and by the gateway itself when the authenticator in front does not check scopes.
func TestMissingRequiredScopeIsRefusedInBothEras(t *testing.T) {
	noUse := testTokens{"alice-nouse": {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:write"}}}
	for name, checks := range map[string]bool{"authenticator": true, "gateway": false} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				a := auth.AuthenticatorOptions{Verifier: noUse, ResourceMetadataURL: resourceMetadata}
				if checks {
					a.RequiredScopes = o.Policy.RequiredScopes()
				}
				o.Authenticate = auth.NewAuthenticator(a).Middleware
				o.Pool.WorkerPer = pool.PerUser
			})
			c := f.client("alice-nouse")
			if r := c.rpc("1", "initialize", initParams("2025-06-18")); r.status != http.StatusForbidden || r.header.Get(headerSessionID) != "" {
				t.Errorf("initialize: %d %s, want 403 and no session", r.status, r.body)
			}
			if r := c.sessionless("2", "tools/list", nil); r.status != http.StatusForbidden {
				t.Errorf("sessionless tools/list: %d %s, want 403", r.status, r.body)
			}
			if r := c.sessionless("3", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}); r.status != http.StatusForbidden {
				t.Errorf("sessionless tools/call: %d %s, want 403", r.status, r.body)
			}
			if workersRunning(t, f) != 0 {
				t.Errorf("%d workers started for a token without the required scopes", workersRunning(t, f))
			}
		})
	}
}
