//lint:file-ignore SA1019 sampling and logging are deprecated from 2026-07-28 but part of 2025-11-25, which gemgate serves: the client here exercises them on purpose.

package test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionlessPost sends one 2026-07-28 request as raw HTTP (JSON answers only) and decodes the
// answer.
func sessionlessPost(t *testing.T, url, token, id, method string, params map[string]any) (int, map[string]json.RawMessage) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	name, _ := params["name"].(string)
	resp, err := http.DefaultClient.Do(sessionlessRequest(t, url, token, body, method, name))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %d %q", method, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// sessionlessRequest is a 2026-07-28 POST of body (JSON answers only) with the headers that
// mirror it: the version, Mcp-Method and, when name is set, Mcp-Name.
func sessionlessRequest(t *testing.T, url, token string, body []byte, method, name string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	return req
}

// legacyPost is one legacy POST (session id and version header when given).
func legacyPost(t *testing.T, url, token, session, body string) (string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("legacy POST: %d %s", resp.StatusCode, b)
	}
	return resp.Header.Get("Mcp-Session-Id"), b
}

// The Go SDK client (2026-07-28 first) and a legacy client (raw POSTs), the same user at
// once, against the demo worker, a go-sdk v1.8.0 server that speaks 2026-07-28 itself: the
// SDK client's calls go to the user's sessionless worker, whose own input-required results
// (elicitation, sampling) the client answers by retrying, and the legacy session keeps the
// user's initialized worker: two workers, one per era, since one stdio session is of one era.
func TestSessionlessClientAndLegacyClientSameUser(t *testing.T) {
	g := startDev(t)
	token := g.Tokens["alice"]
	elicited, sampled := 0, 0
	cs := connectSessionless(t, g.URL, token, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled++
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	})
	session, _ := legacyPost(t, g.URL, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}`)
	legacyPost(t, g.URL, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	if res := callTool(t, cs, "write_note", map[string]any{"name": "n1", "text": "x"}); res.IsError {
		t.Fatalf("write_note: %s", text(res))
	}
	if got := text(callTool(t, cs, "delete_note", map[string]any{"name": "n1"})); !strings.Contains(got, "deleted") || elicited != 1 {
		t.Errorf("delete_note = %q after %d elicitations, want deleted after 1", got, elicited)
	}
	if got := text(callTool(t, cs, "ask_model", map[string]any{"prompt": "meaning?"})); !strings.Contains(got, "forty-two") || sampled != 1 {
		t.Errorf("ask_model = %q after %d samplings", got, sampled)
	}
	_, b := legacyPost(t, g.URL, token, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if !strings.Contains(string(b), "user=alice") {
		t.Errorf("legacy whoami: %s", b)
	}
	if !logShows(g, `"era":"2026-07-28"`, 10*time.Second) {
		t.Errorf("the SDK client's calls did not go the 2026-07-28 way")
	}
	g.waitWorkers(t, 2, 10*time.Second)
	logShows(g, `"protocol_version":"2026-07-28","sessionless":true`, 10*time.Second)
	if n := strings.Count(g.logs.String(), `"protocol_version":"2026-07-28","sessionless":true`); n != 1 {
		t.Errorf("%d sessionless workers started, want 1", n)
	}
}

// With a worker program that speaks no 2026-07-28 (the go-sdk v1.6.1 everything-server), a
// legacy session (raw POSTs) and the Go SDK client speaking 2026-07-28, the same user at once,
// share one worker: gemgate bridges the sessionless calls to it.
func TestSessionlessClientAndLegacyClientShareOneWorker(t *testing.T) {
	g := startLegacyEverything(t)
	token := g.Tokens["alice"]
	cs := connectSessionless(t, g.URL, token, nil)
	session, _ := legacyPost(t, g.URL, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}`)
	legacyPost(t, g.URL, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if got := text(callTool(t, cs, "test_simple_text", map[string]any{})); got == "" {
		t.Errorf("sessionless test_simple_text: empty")
	}
	_, b := legacyPost(t, g.URL, token, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`)
	if !strings.Contains(string(b), `"text"`) {
		t.Errorf("legacy test_simple_text: %s", b)
	}
	if !logShows(g, `"era":"2026-07-28"`, 10*time.Second) {
		t.Errorf("the SDK client's calls did not go the 2026-07-28 way")
	}
	g.waitWorkers(t, 1, 10*time.Second)
}

// A bridged call's requestState (a legacy worker's elicitation, parked by gemgate) is refused
// when tampered, presented by another user, or presented to another gemgate process (another
// key), each with -32602 and a message saying what to do; the owner's retry then completes it.
func TestSessionlessRequestStateRefusals(t *testing.T) {
	g := startLegacyEverything(t)
	alice, bob := g.Tokens["alice"], g.Tokens["bob"]
	const tool = "test_elicitation"
	args := map[string]any{"message": "Your name?"}
	status, out := sessionlessPost(t, g.URL, alice, "2", "tools/call", map[string]any{"name": tool, "arguments": args})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(out["result"], &res); err != nil || res.ResultType != "input_required" || res.RequestState == "" || len(res.InputRequests) != 1 {
		t.Fatalf("%s: %d %s %s", tool, status, out["result"], out["error"])
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	retry := func(url, token, state string) (int, string) {
		status, out := sessionlessPost(t, url, token, "3", "tools/call", map[string]any{"name": tool, "arguments": args,
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"username": "ann"}}}, "requestState": state})
		return status, string(out["error"]) + string(out["result"])
	}
	other := startDev(t)
	for _, tc := range []struct {
		name, url, token, state, want string
	}{
		{"tampered", g.URL, alice, res.RequestState + "-TAMPERED", "verification"},
		{"another user", g.URL, bob, res.RequestState, "does not belong"},
		{"another gemgate process", other.URL, other.Tokens["alice"], res.RequestState, "another gemgate process"},
	} {
		if status, body := retry(tc.url, tc.token, tc.state); status != http.StatusBadRequest || !strings.Contains(body, "-32602") || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	// The refusals left the parked call alone: the owner's retry completes it.
	if status, body := retry(g.URL, alice, res.RequestState); status != http.StatusOK || !strings.Contains(body, "action=accept") || !strings.Contains(body, "ann") {
		t.Errorf("owner's retry: %d %s", status, body)
	}
}

// connectSessionless is connect without the era pinned: the Go SDK client speaks 2026-07-28
// first, which gemgate serves.
func connectSessionless(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-e2e-sessionless", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientWithToken(token)}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
