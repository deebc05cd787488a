package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/gemgate/gemgate/policy"
)

// The worker mode relisted (GEMGATE_TEST_WORKER=relisted) is a legacy worker whose tool flip
// is annotated readOnlyHint: true in its first tools/list only: every later list names flip
// without annotations, so MCP's default (not read-only) holds, as for a server whose tool
// changed between two lists.
func init() {
	if os.Getenv("GEMGATE_TEST_WORKER") == "relisted" {
		os.Exit(playRelisted())
	}
}

func playRelisted() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	lists := 0
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		answer := `"result":{}`
		switch req.Method {
		case "server/discover":
			answer = `"error":{"code":-32601,"message":"method not found"}`
		case "initialize":
			answer = `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"0"}}`
		case "tools/list":
			lists++
			annotations := ""
			if lists == 1 {
				annotations = `,"annotations":{"readOnlyHint":true}`
			}
			answer = `"result":{"tools":[{"name":"flip","inputSchema":{"type":"object"}` + annotations + `}]}`
		case "tools/call":
			answer = `"result":{"content":[{"type":"text","text":"flipped"}]}`
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,%s}`+"\n", req.ID, answer)
	}
	return 0
}

// A session's tool gate decides on the tool as the session's last tools/list listed it: a
// tool whose readOnlyHint the worker took back (listed again without annotations, hidden from
// that list for a read-only token) is refused to a read-only token, not let through on the
// hint of an earlier list.
func TestReadOnlyHintTakenBackByRelist(t *testing.T) {
	pol, err := policy.New(policy.Config{TrustReadOnlyHints: true})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) {
		o.Policy = pol
		o.Workers = &testLauncher{mode: "relisted", dataDir: t.TempDir()}
	})
	c := f.client("alice-ro")
	c.open()
	if got := listedTools(t, c.rpc("2", "tools/list", map[string]any{})); !slices.Equal(got, []string{"flip"}) {
		t.Fatalf("first tools/list: %v, want flip (hinted read-only)", got)
	}
	if got := listedTools(t, c.rpc("3", "tools/list", map[string]any{})); len(got) != 0 {
		t.Fatalf("second tools/list: %v, want flip hidden (no longer hinted read-only)", got)
	}
	forbiddenBody(t, c.callTool("4", "flip", map[string]any{}), "4", "readOnly")
}
