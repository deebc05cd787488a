package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

func listedTools(t *testing.T, r reply) []string {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	m := r.only(t)
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		t.Fatalf("tools/list: %s", r.body)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

var mutatingDemoTools = []string{"delete_note", "toggle_extra_tool", "write_note"}

// forbiddenBody checks a 403's JSON-RPC body: the client's id, the policy code, data.kind.
func forbiddenBody(t *testing.T, r reply, id, kind string) {
	t.Helper()
	if r.status != http.StatusForbidden {
		t.Fatalf("status %d, want 403 (body %s)", r.status, r.body)
	}
	m := r.only(t)
	if string(m.ID) != id {
		t.Errorf("error id %s, want %s", m.ID, id)
	}
	var e struct {
		Code int64 `json:"code"`
		Data struct {
			Kind string `json:"kind"`
		} `json:"data"`
	}
	if err := json.Unmarshal(m.Error, &e); err != nil {
		t.Fatal(err)
	}
	if e.Code != codeForbidden || e.Data.Kind != kind {
		t.Errorf("error code %d kind %q, want %d %q", e.Code, e.Data.Kind, codeForbidden, kind)
	}
}

type scopeCall struct{ granted, needed []string }

func TestReadOnlySessionAnonymous(t *testing.T) {
	var mu sync.Mutex
	var calls []scopeCall
	f := newFixture(t, func(o *Options) {
		o.Authenticate = auth.Anonymous(auth.Principal{Issuer: "local", Subject: "me", User: "me", Scopes: []string{"mcp:use"}})
		o.InsufficientScope = func(h http.Header, granted, needed []string, _ string) {
			mu.Lock()
			calls = append(calls, scopeCall{granted, needed})
			mu.Unlock()
			h.Set("WWW-Authenticate", "test")
		}
	})
	c := f.client("")
	c.open()
	names := listedTools(t, c.rpc("2", "tools/list", map[string]any{}))
	for _, m := range mutatingDemoTools {
		if slices.Contains(names, m) {
			t.Errorf("read-only session lists %s: %v", m, names)
		}
	}
	if !slices.Contains(names, "echo") {
		t.Errorf("vouched tool echo is missing: %v", names)
	}
	r := c.callTool(`"w-1"`, "write_note", map[string]any{"name": "n", "text": "x"})
	forbiddenBody(t, r, `"w-1"`, "readOnly")
	if r.header.Get("WWW-Authenticate") != "test" {
		t.Error("the challenge hook's header was not sent")
	}
	want := []scopeCall{{granted: []string{"mcp:use"}, needed: []string{"mcp:write"}}}
	if diff := cmp.Diff(want, calls, cmp.AllowUnexported(scopeCall{})); diff != "" {
		t.Errorf("InsufficientScope calls (-want +got):\n%s", diff)
	}
	if n := metricValue(t, f, "gemgate_tool_calls_total", "outcome", "readOnly"); n != 1 {
		t.Errorf("tool_calls_total{outcome=readOnly} = %v", n)
	}
}

func TestReadOnlyChallengeFromAuthenticator(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-ro")
	c.open()
	r := c.callTool("5", "write_note", map[string]any{"name": "n", "text": "x"})
	forbiddenBody(t, r, "5", "readOnly")
	ch := r.header.Get("WWW-Authenticate")
	for _, part := range []string{`Bearer error="insufficient_scope"`, `scope="mcp:use mcp:write"`, `resource_metadata="` + resourceMetadata + `"`} {
		if !containsStr(ch, part) {
			t.Errorf("WWW-Authenticate %q lacks %s", ch, part)
		}
	}
}

func TestRequestTokenNarrowsSession(t *testing.T) {
	f := newFixture(t)
	rw := f.client("alice-rw")
	rw.open()
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}

	if names := listedTools(t, rw.rpc("2", "tools/list", map[string]any{})); !slices.Contains(names, "write_note") {
		t.Errorf("read-write token does not list write_note: %v", names)
	}
	if names := listedTools(t, ro.rpc("3", "tools/list", map[string]any{})); slices.Contains(names, "write_note") {
		t.Errorf("read-only token on a read-write session lists write_note: %v", names)
	}
	forbiddenBody(t, ro.callTool("4", "write_note", map[string]any{"name": "n", "text": "x"}), "4", "readOnly")
	if r := rw.callTool("5", "write_note", map[string]any{"name": "n", "text": "x"}); r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Errorf("read-write token cannot write: %s", r.body)
	}
}

// Step-up: a session opened read-only meets 403 on a write; the same session with a
// read-write token moves to the user's read-write worker and the write succeeds, in both
// worker_per modes.
func TestStepUpMovesSessionToReadWriteWorker(t *testing.T) {
	for _, per := range []string{pool.PerUser, pool.PerSession} {
		t.Run(per, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Pool.WorkerPer = per })
			ro := f.client("alice-ro")
			ro.open()
			forbiddenBody(t, ro.callTool("6", "write_note", map[string]any{"name": "n", "text": "x"}), "6", "readOnly")
			roPid := ro.sessionObj().member.WorkerPid()
			rw := &client{f: f, token: "alice-rw", session: ro.session, version: ro.version}
			r := rw.callTool("7", "write_note", map[string]any{"name": "n", "text": "x"})
			if m := r.only(t); r.status != http.StatusOK || m.Error != nil || isToolError(m.Result) {
				t.Fatalf("write after step-up: %d %s", r.status, r.body)
			}
			if pid := ro.sessionObj().member.WorkerPid(); pid == roPid {
				t.Errorf("the stepped-up session still uses the read-only worker %d", pid)
			}
			msgs, _, _ := outboxTake(ro.sessionObj().outbox, ro.sessionObj().outbox.Current())
			if len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1]), "notifications/tools/list_changed") {
				t.Errorf("no tools/list_changed for the stepped-up session: %q", msgs)
			}
			// The step-up line names the new worker, once.
			var line string
			for l := range strings.SplitSeq(f.log.String(), "\n") {
				if strings.Contains(l, "session stepped up to read-write") {
					line = l
				}
			}
			if want := `"worker":"` + ro.sessionObj().member.WorkerID() + `"`; strings.Count(line, `"worker":`) != 1 || !strings.Contains(line, want) {
				t.Errorf("step-up log line %q: want the key worker once, as %s", line, want)
			}
			// The reverse stays refused per call.
			forbiddenBody(t, ro.callTool("8", "write_note", map[string]any{"name": "n", "text": "y"}), "8", "readOnly")
		})
	}
}

func TestForbiddenToolNamesUnlockingScope(t *testing.T) {
	pol, err := policy.New(policy.Config{
		ReadOnlyTools: demoReadOnlyTools,
		Rules:         []policy.Rule{{Scope: "notes:admin", Tools: []string{"delete_note"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Policy = pol })
	c := f.client("alice-rw")
	c.open()
	r := c.callTool("8", "delete_note", map[string]any{"name": "n"})
	forbiddenBody(t, r, "8", "forbidden")
	if ch := r.header.Get("WWW-Authenticate"); !containsStr(ch, `scope="mcp:use mcp:write notes:admin"`) {
		t.Errorf("WWW-Authenticate %q does not name granted ∪ notes:admin", ch)
	}
	// For a read-only access only the rule's scope unlocks it; the write scope alone does not,
	// and is asked for besides it.
	got, why := f.gw.forbiddenChallenge(policy.KindTool, pol.DecideToken(policy.Token{Scopes: []string{"mcp:use"}}), "delete_note", nil)
	if !slices.Equal(got, []string{"notes:admin", "mcp:write"}) || !strings.Contains(why, "needs scope notes:admin, and scope mcp:write") {
		t.Errorf("forbiddenChallenge = %v, %q; want notes:admin, and mcp:write besides", got, why)
	}
}

func TestMissingRequiredScopeOnSession(t *testing.T) {
	// Behind an authenticator that does not check required scopes, the session still does.
	var p = auth.Principal{Issuer: "local", Subject: "me", User: "me", Scopes: []string{"mcp:use", "mcp:write"}}
	f := newFixture(t, func(o *Options) {
		o.Authenticate = func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				q := p
				if r.Header.Get("X-Drop-Scopes") != "" {
					q.Scopes = nil
				}
				next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), q)))
			})
		}
	})
	c := f.client("")
	c.open()
	r := c.post(rpcBody("9", "tools/list", map[string]any{}), "X-Drop-Scopes", "1")
	forbiddenBody(t, r, "9", "forbidden")
	if r := c.post(rpcBody("10", "initialize", initParams("2025-06-18")), "X-Drop-Scopes", "1", headerSessionID, ""); r.status != http.StatusForbidden {
		t.Errorf("initialize without required scopes: %d", r.status)
	}
}
