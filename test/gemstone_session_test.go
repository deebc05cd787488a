package test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The GemStone worker's session model (docs/gemstone.md, "One GemStone session per client"):
// each client its own GemStone session by default; a relay's death ends the sessions it
// served, whatever worker_per says; a sessionless (2026-07-28) request runs in no GemStone
// session and is refused, so the client falls back to initialize.

// TestGemStoneEachClientItsOwnSession: two clients of one user get two relays (two GemStone
// sessions, two transaction views) by default; with worker_per: user they share one.
func TestGemStoneEachClientItsOwnSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		same  bool
	}{{"default", nil, false}, {"worker_per user", []string{"--worker-per", "user"}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGemStoneDev(t, nil, tc.flags...)
			a, b := ltOpen(t, g, g.Tokens["alice"], nil), ltOpen(t, g, g.Tokens["alice"], nil)
			pa, pb := ltWorkerPID(t, g, a.id), ltWorkerPID(t, g, b.id)
			if (pa == pb) != tc.same {
				t.Errorf("two sessions of alice run in relays %d and %d; want the same relay: %v", pa, pb, tc.same)
			}
			if tc.same {
				ltWaitLog(t, g, "share one GemStone session", 10*time.Second) // the start log says what sharing costs
			}
		})
	}
}

// TestGemStoneWorkerExitEndsItsSessions: the call that meets a dead relay is answered with an
// error, and the session ends with it (worker_exit), so the next request gets 404 and the
// client starts again: never a fresh GemStone login under the old session, by default and with
// worker_per: user (where other workers' sessions stay by default).
func TestGemStoneWorkerExitEndsItsSessions(t *testing.T) {
	t.Parallel()
	needFake(t, "a crash mid-call")
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"default", nil}, {"worker_per user", []string{"--worker-per", "user"}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGemStoneDev(t, map[string]any{"fault": "crash"}, tc.flags...)
			s := ltOpen(t, g, g.Tokens["alice"], nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			m, _, _, err := s.call(ctx, "crash-1", "tools/call", map[string]any{"name": "status", "arguments": map[string]any{}})
			if err != nil || m.Error == nil || string(m.ID) != `"crash-1"` {
				t.Fatalf("the call whose relay died: %+v, %v; want an error with its id", m, err)
			}
			pollUntil(t, 10*time.Second, "the session to end with its worker", func() bool { return ltEndReason(g, s.id) == "worker_exit" })
			_, _, _, err = s.call(ctx, "after-1", "tools/list", nil)
			if err == nil || !strings.Contains(err.Error(), "status 404") {
				t.Errorf("the request after the relay died: %v; want 404 (the session ended, the client starts again)", err)
			}
		})
	}
}

// TestGemStoneSessionlessIsRefused: a 2026-07-28 request has no session to own a GemStone
// transaction view, so the GemStone worker serves none, whatever worker_per says: 400,
// UnsupportedProtocolVersion naming the legacy versions, and no relay started.
func TestGemStoneSessionlessIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"default", nil}, {"worker_per user", []string{"--worker-per", "user"}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGemStoneDev(t, nil, tc.flags...)
			for _, method := range []string{"server/discover", "tools/list"} {
				code, out := sessionlessPost(t, g.URL, g.Tokens["alice"], "7", method, nil)
				var e struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Data    struct {
						Supported []string `json:"supported"`
					} `json:"data"`
				}
				_ = json.Unmarshal(out["error"], &e)
				if code != http.StatusBadRequest || e.Code != -32022 || len(e.Data.Supported) == 0 || !strings.Contains(e.Message, "GemStone") || !strings.Contains(e.Message, "use initialize") {
					t.Errorf("%s: %d %s; want 400, -32022 naming the legacy versions and why", method, code, out["error"])
				}
			}
			if strings.Contains(g.logs.String(), "worker started") {
				t.Error("a sessionless request started a relay")
			}
		})
	}
}

// TestGemStoneSandboxedRelay is the real-stone acceptance run's leg with the sandbox on: the
// GemStone worker runs without bubblewrap by default, since no public source says a linked gem
// works in a PID namespace (docs/gemstone.md, "The host a linked gem needs, and the
// sandbox"); this leg settles it. Against the fake it shows only that the relay runs there.
func TestGemStoneSandboxedRelay(t *testing.T) {
	t.Parallel()
	if !realStone() && os.Getenv("GEMGATE_TEST_REQUIRE_GEMSTONE") == "1" {
		t.Fatal("GEMGATE_TEST_REQUIRE_GEMSTONE=1: the relay in bubblewrap's PID namespace is a check only a real stone settles, and GEMGATE_TEST_GEMSTONE names none")
	}
	g := startGemStoneDev(t, nil, "--worker-sandbox", "bwrap")
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	if got := text(callTool(t, cs, "status", nil)); !strings.Contains(got, "alice") {
		t.Errorf("status from a sandboxed relay = %q", got)
	}
	if got := text(callTool(t, cs, "execute_code", map[string]any{"code": "'sandboxed'"})); got != "'sandboxed'" {
		t.Errorf("execute_code from a sandboxed relay = %q", got)
	}
}

// TestGemStoneCheckStatesTheSessionModel: gemgate check names what worker_per: user costs a
// GemStone site, and why the relay runs as it does (the sandbox, or root).
func TestGemStoneCheckStatesTheSessionModel(t *testing.T) {
	t.Parallel()
	flags := fakeStone(t, nil)
	run := func(extra ...string) string {
		cmd := exec.Command(gemgateBin, append(append([]string{"check", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--worker-credential", "exchange"}, flags...), extra...)...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	const shared = "share one GemStone session"
	if out := run("--worker-per", "user"); !strings.Contains(out, "WARNING  worker_per: user with worker=gemstone") || !strings.Contains(out, shared) {
		t.Errorf("check with worker_per: user does not state the shared session:\n%s", out)
	}
	out := run()
	if strings.Contains(out, shared) {
		t.Errorf("check warns of a shared session by default:\n%s", out)
	}
	want := "linked gem" // as an ordinary account: the sandbox line says why there is none
	if os.Geteuid() == 0 {
		want = "gemgate runs as root with worker=gemstone"
	}
	if !strings.Contains(out, want) {
		t.Errorf("check lacks %q:\n%s", want, out)
	}
}
