package gemstone

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// startRelay starts the relay for user as the gateway would, with the credential tok.
func startRelay(t *testing.T, s stone, user, tok string, readOnly bool) *worker.Process {
	t.Helper()
	return startRelayLogging(t, s, user, tok, readOnly, nil)
}

// startRelayLogging is startRelay with gemgate's log for the worker (nil: none).
func startRelayLogging(t *testing.T, s stone, user, tok string, readOnly bool, log *slog.Logger) *worker.Process {
	t.Helper()
	r, err := Prepare(context.Background(), s.config(t))
	if err != nil {
		t.Fatal(err)
	}
	args := r.Command()[1:]
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "{user}", user)
	}
	ro := "0"
	if readOnly {
		ro = "1"
	}
	env := append(append(os.Environ(), relayEnv(t, r)...), "GEMGATE_USER="+user, "GEMGATE_READ_ONLY="+ro)
	spec := worker.Spec{Path: r.Topaz, Args: args, Env: env, Credential: []byte(tok), CredentialStdin: true, StopGrace: 200 * time.Millisecond, Logger: log}
	Apply(&spec)
	p, err := worker.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// relayEnv is the relay's environment for one session, as gemgate's launcher makes it: the
// relay's own and the NetLDI that SessionNRS finds now. Where SessionNRS finds none (the
// launcher would start no relay), the relay starts without one, so that a test can see what
// the stone itself says to such a login.
func relayEnv(t *testing.T, r *Relay) []string {
	t.Helper()
	nrs, err := r.SessionNRS(context.Background())
	if err != nil {
		t.Logf("the relay starts without a NetLDI: %v", err)
	}
	if nrs == "" {
		return r.Env()
	}
	return append(r.Env(), nrs)
}

// call sends one request and waits for its answer.
func call(t *testing.T, p *worker.Process, method string, params any) *jsonrpc.Message {
	t.Helper()
	b, _ := json.Marshal(params)
	c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"c1"`), Method: method, Params: b}, nil)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case m := <-c.Result():
		if string(m.ID) != `"c1"` {
			t.Errorf("%s answered id %s, want the caller's", method, m.ID)
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no answer", method)
		return nil
	}
}

// refusalText is why the relay refused initialize: the error answer, or, when the refusal
// came first and the relay is already gone, the error of the send itself, which names it.
func refusalText(t *testing.T, p *worker.Process) string {
	t.Helper()
	c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"c1"`), Method: "initialize", Params: json.RawMessage(`{}`)}, nil)
	if err != nil {
		return err.Error()
	}
	select {
	case m := <-c.Result():
		return errorText(m)
	case <-time.After(20 * time.Second):
		t.Fatal("initialize: no answer")
		return ""
	}
}

func errorText(m *jsonrpc.Message) string {
	var e struct{ Message string }
	json.Unmarshal(m.Error, &e)
	return e.Message
}

func toolCount(t *testing.T, m *jsonrpc.Message) int {
	t.Helper()
	var r struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatalf("tools/list: %s %s", m.Result, m.Error)
	}
	return len(r.Tools)
}

func TestRelayServesTheUser(t *testing.T) {
	s := newStone(t, nil)
	for _, tc := range []struct {
		readOnly bool
		tools    int
	}{{false, 31}, {true, 22}} {
		p := startRelay(t, s, "alice", token(goodClaims("alice")), tc.readOnly)
		init := call(t, p, "initialize", map[string]any{"protocolVersion": "2025-06-18"})
		if !strings.Contains(string(init.Result), `"protocolVersion":"2025-06-18"`) {
			t.Errorf("initialize = %s %s", init.Result, init.Error)
		}
		if n := toolCount(t, call(t, p, "tools/list", nil)); n != tc.tools {
			t.Errorf("read-only %v: %d tools, want %d", tc.readOnly, n, tc.tools)
		}
		st := call(t, p, "tools/call", map[string]any{"name": "status"})
		if !strings.Contains(string(st.Result), "user: alice") {
			t.Errorf("status = %s", st.Result)
		}
	}
}

func TestRelayRefusalsNameTheCause(t *testing.T) {
	expired := goodClaims("alice")
	expired["exp"] = time.Now().Add(-time.Minute).Unix()
	arrayAud := goodClaims("alice")
	arrayAud["aud"] = []string{"gemstone", "account"}
	otherAud := goodClaims("alice")
	otherAud["aud"] = "https://gemgate.example/mcp"
	wrongSub := goodClaims("alice")
	wrongSub["sub"] = "bob"
	for _, tc := range []struct {
		name    string
		cfg     map[string]any
		servers []string
		user    string
		claims  map[string]any
		want    []string
	}{
		{"expired", nil, nil, "alice", expired, []string{"expired", "GemStone said: Invalid JWT: token expired"}},
		{"array audience", nil, nil, "alice", arrayAud, []string{"single string", "Invalid or missing aud"}},
		{"other audience", nil, nil, "alice", otherAud, []string{"audience", "exchange"}},
		{"unknown user", nil, nil, "carol", goodClaims("carol"), []string{"no JWT-enabled user", "'carol' not found"}},
		{"claim mismatch", nil, nil, "alice", wrongSub, []string{"user_claim", "does not match"}},
		{"old stone", map[string]any{"version": "3.7.2"}, nil, "alice", goodClaims("alice"), []string{"3.7.5 or later"}},
		{"no netldi", nil, []string{"Stone gs64stone"}, "alice", goodClaims("alice"), []string{"netldi"}},
		{"stone down", nil, []string{"Netldi gs64ldi"}, "alice", goodClaims("alice"), []string{"GEMSTONE_GLOBAL_DIR", "4065"}},
		{"no McpServer", map[string]any{"no_mcp_server": true}, nil, "alice", goodClaims("alice"), []string{"not visible", "McpServer"}},
		{"service password", map[string]any{"service_password": "other"}, nil, "alice", goodClaims("alice"), []string{"4051", "gemgate check"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStone(t, tc.cfg, tc.servers...)
			tok := token(tc.claims)
			p := startRelay(t, s, tc.user, tok, false)
			msg := refusalText(t, p)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("initialize error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, tok) {
				t.Error("the error carries the token")
			}
		})
	}
}

func TestCorruptAnswerFailsItsCallNamingTheDefect(t *testing.T) {
	for _, raw := range []bool{false, true} {
		s := newStone(t, map[string]any{"defect_51438": true, "raw_relay": raw})
		p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
		exec := func(n int) *jsonrpc.Message {
			return call(t, p, "tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "String new: " + itoa(n) + " withAll: $x"}})
		}
		if m := exec(3000); m.Error != nil || !strings.Contains(string(m.Result), strings.Repeat("x", 3000)) {
			t.Fatalf("raw %v: the first large answer (it grows the buffer) = %.200s %s", raw, m.Result, m.Error)
		}
		m := exec(2000) // between 1,025 bytes and the grown buffer: stale tail
		if msg := errorText(m); msg != StrictError {
			t.Errorf("raw %v: corrupted answer gave %.200s / error %q", raw, m.Result, msg)
		}
		if m := exec(10); m.Error != nil {
			t.Errorf("raw %v: a small answer after the corruption failed: %s", raw, m.Error)
		}
	}
}

func TestCrashFailsTheCall(t *testing.T) {
	s := newStone(t, map[string]any{"fault": "crash"})
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	call(t, p, "initialize", map[string]any{})
	if msg := errorText(call(t, p, "tools/call", map[string]any{"name": "status"})); !strings.Contains(msg, "exited") {
		t.Errorf("crash gave %q", msg)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
