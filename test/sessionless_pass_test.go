package test

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startSessionlessEverything runs gemgate with the go-sdk v1.8.0 everything-server as its stdio
// worker: a worker program that speaks 2026-07-28 itself and answers with its own
// input-required results (its keys, its requestState, several rounds).
func startSessionlessEverything(t *testing.T) *gemgate {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sessionless-everything-server")
	if out, err := exec.Command("go", "build", "-o", bin, confEverythingPkg).CombinedOutput(); err != nil {
		t.Fatalf("building the go-sdk v1.8.0 everything-server: %v\n%s", err, out)
	}
	return startDev(t, "--worker", "command", "--worker-command", bin, "--worker-start-rate", "0",
		"--read-only-tools", "test_input_required_result_multi_round")
}

// inputRequired is an input-required result as the client sees it.
type inputRequired struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	Content       []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// decodeResult returns a decoder of sessionlessPost's answer that fails t unless it is a result.
func decodeResult(t *testing.T) func(int, map[string]json.RawMessage) inputRequired {
	return func(status int, out map[string]json.RawMessage) inputRequired {
		t.Helper()
		var res inputRequired
		if status != http.StatusOK || out["error"] != nil || json.Unmarshal(out["result"], &res) != nil {
			t.Fatalf("answer: %d %s %s", status, out["result"], out["error"])
		}
		return res
	}
}

// A sessionless worker's own input-required results reach a 2026-07-28 client untouched (its keys,
// its rounds), its requestState wrapped in gemgate's, which binds it to the user, the access
// mode and the worker; each retry restores the worker's state. A state tampered with,
// presented by another user, with a read-only token of the same user, or the worker's own
// state presented raw, is refused before anything reaches the worker.
func TestSessionlessWorkerInputRequiredPassesThrough(t *testing.T) {
	g := startSessionlessEverything(t)
	alice, bob := g.Tokens["alice"], g.Tokens["bob"]
	aliceRO := puToken(t, g, "alice", "mcp:use")
	const tool = "test_input_required_result_multi_round"
	result := decodeResult(t)
	call := func(token, id string, extra map[string]any) (int, map[string]json.RawMessage) {
		params := map[string]any{"name": tool, "arguments": map[string]any{}}
		for k, v := range extra {
			params[k] = v
		}
		return sessionlessPost(t, g.URL, token, id, "tools/call", params)
	}

	r1 := result(call(alice, "1", nil))
	if r1.ResultType != "input_required" || r1.InputRequests["step1"] == nil || len(r1.InputRequests) != 1 {
		t.Fatalf("round 1: %+v, want the worker's own key step1", r1)
	}
	if !strings.HasPrefix(r1.RequestState, "gg1.") || strings.Contains(r1.RequestState, "round=1") {
		t.Fatalf("round 1 requestState %q is not gemgate's wrapping", r1.RequestState)
	}

	answer1 := map[string]any{"step1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ann"}}}
	// The same user's read-only token is refused as its answer to a read-write worker's
	// question in a session is: 403 insufficient_scope, -32003.
	for _, tc := range []struct {
		name, token, state, want string
		status                   int
		code                     string
	}{
		{"tampered", alice, r1.RequestState + "-TAMPERED", "verification", http.StatusBadRequest, "-32602"},
		{"another user", bob, r1.RequestState, "does not belong", http.StatusBadRequest, "-32602"},
		{"the same user read-only", aliceRO, r1.RequestState, "the worker that asked is read-write and this token may only read", http.StatusForbidden, "-32003"},
		{"the worker's own state, raw", alice, "round=1", "not one gemgate issued", http.StatusBadRequest, "-32602"},
	} {
		status, out := call(tc.token, "9", map[string]any{"inputResponses": answer1, "requestState": tc.state})
		if body := string(out["error"]); status != tc.status || !strings.Contains(body, tc.code) || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s %s; want %d %s %q", tc.name, status, body, out["result"], tc.status, tc.code, tc.want)
		}
	}

	r2 := result(call(alice, "2", map[string]any{"inputResponses": answer1, "requestState": r1.RequestState}))
	if r2.ResultType != "input_required" || r2.InputRequests["step2"] == nil || !strings.HasPrefix(r2.RequestState, "gg1.") {
		t.Fatalf("round 2: %+v, want the worker's second round (step2)", r2)
	}
	answer2 := map[string]any{"step2": map[string]any{"action": "accept", "content": map[string]any{"color": "blue"}}}
	r3 := result(call(alice, "3", map[string]any{"inputResponses": answer2, "requestState": r2.RequestState}))
	if r3.ResultType != "complete" || len(r3.Content) != 1 || r3.Content[0].Text != "Multi-round complete: Ann likes blue" {
		t.Fatalf("round 3: %+v", r3)
	}
	if !logShows(g, `"sessionless":true`, 10*time.Second) {
		t.Errorf("no sessionless worker was started")
	}
}

// startLegacyEverything runs gemgate with the go-sdk v1.6.1 everything-server as its stdio
// worker: a worker program that speaks 2025-11-25 and older only, which gemgate bridges for a
// 2026-07-28 client.
func startLegacyEverything(t *testing.T) *gemgate {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "legacy-everything-server")
	if out, err := exec.Command("go", "build", "-C", "conformance/legacyserver", "-o", bin, confEverythingPkg).CombinedOutput(); err != nil {
		t.Fatalf("building the legacy everything-server: %v\n%s", err, out)
	}
	return startDev(t, "--worker", "command", "--worker-command", bin, "--worker-start-rate", "0",
		"--read-only-tools", "test_simple_text,test_elicitation")
}
