package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two SDKs at once as the same user: the TypeScript SDK client (1.32.2, which speaks
// 2025-11-25 at most: a legacy session, OAuth client credentials included) and the Go SDK
// client (v1.8.0, speaking 2026-07-28) calling tools while the other runs. Both work. The demo
// worker program speaks 2026-07-28 itself, so the process table holds alice's two workers, one
// per era: her initialized one for the legacy session and her sessionless one for the
// sessionless calls (a stdio session is of one era;
// TestSessionlessClientAndLegacyClientShareOneWorker shows one worker for a program that
// gemgate bridges).
func TestSessionlessGoAndTypeScriptClientsAtOnce(t *testing.T) {
	needNodeModules(t)
	g := startDev(t)
	cs := connectSessionless(t, g.URL, g.Tokens["alice"], nil)
	if got := text(callTool(t, cs, "whoami", map[string]any{})); !strings.Contains(got, "user=alice ") {
		t.Fatalf("sessionless whoami before: %q", got)
	}

	// The Go client calls on while the TypeScript client runs its flow (a bounded number of
	// calls; the goroutine reports instead of failing the test from another goroutine).
	done := make(chan struct{})
	type tally struct {
		calls int
		err   error
	}
	result := make(chan tally, 1)
	go func() {
		var n tally
		defer func() { result <- n }()
		for range 50 {
			select {
			case <-done:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sessionless"}})
			cancel()
			if err != nil || res.IsError || text(res) != "sessionless" {
				n.err = err
				if n.err == nil {
					n.err = errText(text(res))
				}
				return
			}
			n.calls++
		}
	}()
	run := runTSClient(t, g, "alice", "read-write", "mcp:use mcp:write")
	close(done)
	got := <-result
	checkNodeReport(t, g, run)
	if w, _ := run.report["whoami"].(string); !strings.Contains(w, "user=alice ") || !strings.Contains(w, "read_only=false") {
		t.Errorf("TypeScript whoami = %q", w)
	}
	t.Logf("the Go client made %d calls while the TypeScript client ran", got.calls)
	if got.err != nil || got.calls == 0 {
		t.Errorf("Go client while the TypeScript client ran: %d calls, error %v", got.calls, got.err)
	}
	if got := text(callTool(t, cs, "whoami", map[string]any{})); !strings.Contains(got, "user=alice ") {
		t.Errorf("sessionless whoami after: %q", got)
	}

	g.waitWorkers(t, 2, 10*time.Second)
	var started []string
	for _, line := range strings.Split(g.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"worker started"`) {
			started = append(started, line)
		}
	}
	if len(started) != 2 {
		t.Fatalf("%d workers started, want 2:\n%s", len(started), strings.Join(started, "\n"))
	}
	eras := map[bool]bool{}
	for _, line := range started {
		if !strings.Contains(line, `"user":"alice"`) || !strings.Contains(line, `"read_only":false`) {
			t.Errorf("a worker not of alice read-write: %s", line)
		}
		eras[strings.Contains(line, `"protocol_version":"2026-07-28"`)] = true
	}
	if !eras[true] || !eras[false] {
		t.Errorf("want one worker per era: %s", strings.Join(started, "\n"))
	}
}

// errText is a tool's error text as an error.
type errText string

func (e errText) Error() string { return string(e) }
