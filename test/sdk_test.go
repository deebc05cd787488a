package test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func TestGoSDKClientListsAndCallsTools(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	names := toolNames(t, cs)
	for _, want := range []string{"whoami", "echo", "write_note", "delete_note", "slow", "list_notes"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if got := text(callTool(t, cs, "whoami", nil)); !strings.Contains(got, "user=alice") || !strings.Contains(got, "read_only=false") {
		t.Errorf("whoami = %q", got)
	}
	if got := text(callTool(t, cs, "echo", map[string]any{"text": "héllo\nworld"})); got != "héllo\nworld" {
		t.Errorf("echo = %q", got)
	}
	res := callTool(t, cs, "write_note", map[string]any{"name": "n1", "text": "first note"})
	if res.IsError {
		t.Fatalf("write_note: %s", text(res))
	}
	if got := text(callTool(t, cs, "read_note", map[string]any{"name": "n1"})); !strings.Contains(got, "first note") {
		t.Errorf("read_note = %q", got)
	}
}

// `gemgate dev --auth none` needs no token: every request is the local user, and it still
// stops cleanly (the harness checks the exit status).
func TestDevWithoutAuth(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--auth", "none")
	if g.Issuer != "" || len(g.Tokens) != 0 {
		t.Errorf("auth none printed an issuer or tokens: %q %v", g.Issuer, g.Tokens)
	}
	cs := connect(t, g.URL, "", nil)
	if got := text(callTool(t, cs, "whoami", nil)); !strings.Contains(got, "read_only=false") {
		t.Errorf("whoami without auth = %q", got)
	}
}
