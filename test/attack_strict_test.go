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
)

// These cases replay, through the real binary, attacks on the gateway's reading of client
// messages: what the gateway approves must be what the worker runs.

// strictRaw is a bare HTTP MCP client that sends bytes as given: the attacks need repeated
// and case-variant keys, which no encoder writes.
type strictRaw struct {
	t                 *testing.T
	url, token        string
	session, protocol string
}

// send POSTs body with extra header pairs and returns the status, headers and the JSON-RPC
// answer (the JSON body, or the last SSE event's data).
func (s *strictRaw) send(body string, header ...string) (int, http.Header, string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
		req.Header.Set("Mcp-Protocol-Version", s.protocol)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	answer := string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		answer = ""
		for line := range strings.SplitSeq(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				answer = data
			}
		}
	}
	return resp.StatusCode, resp.Header, answer
}

func strictOpen(t *testing.T, url, token string) *strictRaw {
	t.Helper()
	s := &strictRaw{t: t, url: url, token: token}
	status, h, answer := s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attack","version":"0"}}}`)
	if status != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", status, answer)
	}
	s.session, s.protocol = h.Get("Mcp-Session-Id"), "2025-06-18"
	if status, _, answer := s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", status, answer)
	}
	return s
}

// rpcErrorCode is the error code of a JSON-RPC answer, 0 when it is not an error.
func rpcErrorCode(t *testing.T, answer string) int {
	t.Helper()
	var m struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &m); err != nil {
		t.Fatalf("answer is not JSON: %v: %q", err, answer)
	}
	if m.Error == nil {
		return 0
	}
	return m.Error.Code
}

// The worker here is the demo server with its own read-only guard off, as a third-party
// server has none: only the gateway stands between bob (read-only) and write_note. Its SDK
// matches keys exactly; encoding/json matched "Name" for "name", so the gateway approved
// read_note while the worker ran write_note.
func TestAttackCaseVariantToolName(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-command", "env GEMGATE_READ_ONLY=0 "+workerBin+" worker demo")
	bob := strictOpen(t, g.URL, g.Tokens["bob"])
	attacks := map[string]string{
		"case variant":   `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_note","Name":"read_note","arguments":{"name":"pwned","text":"x"}}}`,
		"repeat":         `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_note","name":"read_note","arguments":{"name":"pwned","text":"x"}}}`,
		"envelope":       `{"jsonrpc":"2.0","id":4,"method":"tools/list","Method":"tools/call","params":{"name":"write_note","arguments":{"name":"pwned","text":"x"}}}`,
		"escaped repeat": `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"n\u0061me":"write_note","name":"read_note","arguments":{"name":"pwned","text":"x"}}}`,
	}
	for name, body := range attacks {
		status, _, answer := bob.send(body)
		if status != http.StatusBadRequest || rpcErrorCode(t, answer) != -32600 {
			t.Errorf("%s: %d %s, want 400 with -32600", name, status, answer)
		}
	}
	// The proof that matters: no note was written.
	_, _, answer := bob.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_notes","arguments":{}}}`)
	if strings.Contains(answer, "pwned") {
		t.Errorf("bob, read-only, wrote a note: %s", answer)
	}
	if strings.Contains(g.logs.String(), "note written") {
		t.Errorf("the worker wrote a note for a read-only session:\n%s", g.logs)
	}
}

// A body nested 1,000 deep crashed go-sdk workers; the gateway refuses it first and the
// session carries on.
func TestAttackDeepNesting(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	alice := strictOpen(t, g.URL, g.Tokens["alice"])
	deep := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":` +
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}}`
	if status, _, answer := alice.send(deep); status != http.StatusBadRequest || rpcErrorCode(t, answer) != -32600 {
		t.Errorf("1000 deep: %d %s, want 400 with -32600", status, answer)
	}
	status, _, answer := alice.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	if status != http.StatusOK || !bytes.Contains([]byte(answer), []byte("still here")) {
		t.Errorf("the session did not survive: %d %s", status, answer)
	}
}
