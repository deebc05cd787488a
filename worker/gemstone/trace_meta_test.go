package gemstone

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelayPassesTraceContextToTheServer pins that the trace context gemgate puts in a
// request's params._meta (traceparent, tracestate: MCP's SEP-414) reaches the native server's
// `McpServer handleJsonString:` as it was written: the relay hands each request line over
// whole, never rewriting its params. Against the fake stone, which acts out relay.tpz's loop
// and records the _meta its McpServer was handed; a real stone's server has no such record.
func TestRelayPassesTraceContextToTheServer(t *testing.T) {
	log := filepath.Join(t.TempDir(), "meta.jsonl")
	s := newStone(t, map[string]any{"meta_log": log})
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	meta := map[string]any{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  "gemgate=1,vendor=x",
	}
	call(t, p, "initialize", map[string]any{"protocolVersion": "2025-11-25"})
	st := call(t, p, "tools/call", map[string]any{"name": "status", "_meta": meta})
	if !strings.Contains(string(st.Result), "user: alice") {
		t.Fatalf("status = %s %s", st.Result, st.Error)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "null" {
		t.Fatalf("the server was handed _meta %q, want null for initialize and then the call's", lines)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range meta {
		if got[k] != v {
			t.Errorf("the server got _meta.%s = %v, want %v", k, got[k], v)
		}
	}
}
