package test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestGemStoneStepUpIsNoFreshLogin: gemgate never logs a GemStone session in again behind the
// client's back (docs/gemstone.md). A read-write token on a read-only session would move any
// other worker's session to the read-write worker; a GemStone session would land in another
// login, its transaction view and session state gone without a word. Instead the session
// ends: the request gets 404, and the client's new session with its token is read-write, a
// fresh login it knows to be fresh. (Against the fake stone: a real one cannot run here.)
func TestGemStoneStepUpIsNoFreshLogin(t *testing.T) {
	t.Parallel()
	needFake(t, "a status tool that shows whether the session's commits are disabled")
	g := startGemStoneDev(t, nil, "--read-only-tools", "status")
	s := ltOpen(t, g, puToken(t, g, "alice", "mcp:use"), nil) // no mcp:write: read-only
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status := map[string]any{"name": "status", "arguments": map[string]any{}}
	m, _, _, err := s.call(ctx, "ro-1", "tools/call", status)
	if err != nil || !strings.Contains(string(m.Result), "read-only: true") {
		t.Fatalf("status on the read-only session: %s %+v %v", m.Result, m.Error, err)
	}
	s.token = g.Tokens["alice"] // read-write, same session
	m, _, _, err = s.call(ctx, "rw-1", "tools/call", status)
	if err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Fatalf("a read-write token on the read-only GemStone session: %s %+v %v; want 404, the session ended", m.Result, m.Error, err)
	}
	rw := ltOpen(t, g, g.Tokens["alice"], nil)
	m, _, _, err = rw.call(ctx, "rw-2", "tools/call", status)
	if err != nil || !strings.Contains(string(m.Result), "read-only: false") {
		t.Fatalf("status on the new read-write session: %s %+v %v", m.Result, m.Error, err)
	}
	if !strings.Contains(g.logs.String(), `"reason":"step_up"`) { // logged before the 404 went out
		t.Errorf("no session ended with reason step_up in the log")
	}
}
