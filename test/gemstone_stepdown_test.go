package test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestGemStoneReadOnlyTokenCannotCommit: a token without the write scope never commits,
// whichever session it calls. docs/gemstone.md ("Read-only users") says a read-only session
// has its commits disabled in GemStone (System disableCommitsWithReason:), which is what
// makes a Smalltalk-running tool in read_only_tools (the test runners, or execute_code where
// the operator lists it) safe to hand a read-only token. A session opened with a read-write
// token and then called with a read-only one (a client whose refreshed token lost the write
// scope, or that hands the session to a narrower agent) must be no way around that: the call
// is refused, or the session ends, but it never runs in the read-write login whose commits
// are enabled. (Against the fake stone, whose execute_code commits when its code ends with
// System commitTransaction, unless the session's commits are disabled; as the MCP server after
// 0.8.0, it has no read-only mode of its own that would hide the tool.)
func TestGemStoneReadOnlyTokenCannotCommit(t *testing.T) {
	t.Parallel()
	needFake(t, "execute_code that commits, as the fake acts it out")
	g := startGemStoneDev(t, map[string]any{"server": "unreleased"}, "--read-only-tools", "status,execute_code")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	write := map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "UserGlobals at: #GemgateProbe put: 1. System commitTransaction"}}

	// The read-only session: its commits are disabled, so the same call is refused by GemStone.
	ro := ltOpen(t, g, puToken(t, g, "alice", "mcp:use"), nil)
	m, _, _, err := ro.call(ctx, "ro-1", "tools/call", write)
	if err != nil || !strings.Contains(string(m.Result), "2249") {
		t.Fatalf("a commit on the read-only session: %s %+v %v; want GemStone's 2249", m.Result, m.Error, err)
	}

	// The read-write session, called with a read-only token.
	rw := ltOpen(t, g, g.Tokens["alice"], nil)
	rw.token = puToken(t, g, "alice", "mcp:use")
	m, _, _, err = rw.call(ctx, "ro-2", "tools/call", write)
	if err == nil && m.Error == nil && !strings.Contains(string(m.Result), "2249") {
		t.Errorf("a read-only token committed through a read-write GemStone session: result %s", m.Result)
	}
}
