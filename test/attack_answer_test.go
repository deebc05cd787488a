package test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The attacks on worker requests (elicitation, sampling, roots) of issue 35, items 1 and 2,
// against the real binary: who may answer a worker's question, and which call it belongs to.

// stubbornWorker builds testdata/stubbornworker: a worker that ignores notifications/cancelled.
func stubbornWorker(t *testing.T) string {
	t.Helper()
	return buildTestdata(t, "stubbornworker")
}

// answerAudits are gemgate's "audit worker request" log lines.
func answerAudits(g *gemgate) []map[string]any {
	var out []map[string]any
	for _, rec := range ltLog(g) {
		if rec["msg"] == "audit worker request" {
			out = append(out, rec)
		}
	}
	return out
}

// waitAnswerAudit waits for an "audit worker request" line with every field of want.
func waitAnswerAudit(t *testing.T, g *gemgate, want map[string]any) {
	t.Helper()
	pollUntil(t, 10*time.Second, "an audit worker request line with "+jsonText(want), func() bool {
		for _, rec := range answerAudits(g) {
			all := true
			for k, v := range want {
				all = all && rec[k] == v
			}
			if all {
				return true
			}
		}
		return false
	})
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAttackAnswerAbandonedConfirmationOnReadOnlyCall (item 1, legacy era): alice's delete
// (read-write) keeps running in a worker that ignores notifications/cancelled after its session
// ended; its confirmation comes while the only call gemgate waits for is a peek made with
// alice's read-only token on another of her read-write sessions. The confirmation does not go
// down the peek's stream and the read-only token's "accept" never reaches the worker: gemgate
// answers the worker itself (cancel), and the audit line says so.
func TestAttackAnswerAbandonedConfirmationOnReadOnlyCall(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-command", stubbornWorker(t), "--read-only-tools", "peek,roots")
	ro := puToken(t, g, "alice", "mcp:use")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := ltOpen(t, g, g.Tokens["alice"], map[string]any{"elicitation": map[string]any{}})
	delCtx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	del := puPost(delCtx, a, "del", "tools/call", map[string]any{"name": "delete", "arguments": map[string]any{}})
	ltWaitLog(t, g, "stubborn: deleting", 20*time.Second)
	hangUp() // the delete's client goes away...
	for range del {
	}
	if code := a.delete(); code != http.StatusOK { // ...and ends its session
		t.Fatalf("DELETE of the delete's session: %d", code)
	}

	b := ltOpen(t, g, g.Tokens["alice"], map[string]any{"elicitation": map[string]any{}})
	narrowed := *b
	narrowed.token = ro
	peek := puPost(ctx, &narrowed, "peek", "tools/call", map[string]any{"name": "peek", "arguments": map[string]any{}})
	var answer ltMsg
	for m := range peek {
		if m.Method == "elicitation/create" {
			narrowed.t = t
			code := narrowed.respond(m.ID, map[string]any{"action": "accept", "content": map[string]any{}})
			t.Errorf("the abandoned delete's confirmation went down the read-only token's peek stream; its accept: %d", code)
		}
		if m.Method == "" && (len(m.ID) > 0 || m.Error != nil) {
			answer = m
		}
	}
	if got := puField(string(answer.Result), "text"); !strings.Contains(got, `"cancel"`) {
		t.Fatalf("the worker's confirmation was answered %q (peek's answer %s); want gemgate's cancel", got, answer.Result)
	}
	waitAnswerAudit(t, g, map[string]any{"answered_by": "gemgate", "method": "elicitation/create", "answer": "cancel", "worker_read_only": false, "user": "alice"})
}

// TestAttackAnswerAuditRecordsWhoAnswered (item 1, the audit): alice's peek on her read-write
// session asks her for a confirmation; her read-only token's answer is refused 403 and
// audited as refused, her read-write token's answer is taken and audited with its access.
func TestAttackAnswerAuditRecordsWhoAnswered(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-command", stubbornWorker(t), "--read-only-tools", "peek,roots")
	ro := puToken(t, g, "alice", "mcp:use")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := ltOpen(t, g, g.Tokens["alice"], map[string]any{"elicitation": map[string]any{}})
	peek := puPost(ctx, s, "peek", "tools/call", map[string]any{"name": "peek", "arguments": map[string]any{}})
	ask := ltNext(t, peek, 20*time.Second, "the peek's elicitation", func(m ltMsg) bool { return m.Method == "elicitation/create" })
	narrowed := *s
	narrowed.token = ro
	if code := narrowed.respond(ask.ID, map[string]any{"action": "accept", "content": map[string]any{}}); code != http.StatusForbidden {
		t.Errorf("the read-only token's answer to the read-write worker: %d, want 403", code)
	}
	waitAnswerAudit(t, g, map[string]any{"answered_by": "client", "read_only": true, "outcome": "refused", "user": "alice"})
	if code := s.respond(ask.ID, map[string]any{"action": "decline"}); code != http.StatusAccepted {
		t.Errorf("the read-write token's answer: %d, want 202", code)
	}
	answer, _, ok := puAnswer(t, peek, 20*time.Second)
	if !ok || !strings.Contains(puField(string(answer.Result), "text"), "decline") {
		t.Errorf("peek's answer %s; want the read-write token's decline", answer.Result)
	}
	waitAnswerAudit(t, g, map[string]any{"answered_by": "client", "method": "elicitation/create", "read_only": false,
		"worker_read_only": false, "outcome": "answered", "user": "alice"})
}

// TestAttackAnswerSessionlessAbandonedConfirmation (item 1, 2026-07-28 era): the same abandoned
// delete, and a 2026-07-28 peek as the only request gemgate waits for: the confirmation is not
// parked as the peek's input-required result, and gemgate answers it (cancel).
func TestAttackAnswerSessionlessAbandonedConfirmation(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-command", stubbornWorker(t), "--read-only-tools", "peek,roots")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sessionlessPostContext(ctx, g.URL, g.Tokens["alice"], `"del"`, "tools/call", map[string]any{"name": "delete", "arguments": map[string]any{}})
	}()
	ltWaitLog(t, g, "stubborn: deleting", 20*time.Second)
	cancel()
	<-done
	code, out := sessionlessPost(t, g.URL, g.Tokens["alice"], `"peek"`, "tools/call", map[string]any{"name": "peek", "arguments": map[string]any{}})
	if code != http.StatusOK || out["result"] == nil {
		t.Fatalf("peek: %d %s", code, jsonText(out))
	}
	if strings.Contains(string(out["result"]), "input_required") {
		t.Fatalf("the abandoned delete's confirmation was parked as the peek's input: %s", out["result"])
	}
	if got := puField(string(out["result"]), "text"); !strings.Contains(got, `"cancel"`) {
		t.Errorf("the worker's confirmation was answered %q; want gemgate's cancel", got)
	}
	waitAnswerAudit(t, g, map[string]any{"answered_by": "gemgate", "answer": "cancel"})
}

// sessionlessPostContext is sessionlessPost that gives up with ctx, for a request whose client
// goes away.
func sessionlessPostContext(ctx context.Context, url, token, id, method string, params map[string]any) {
	_, _ = sessionlessAsk(ctx, url, token, id, method, params, map[string]any{"elicitation": map[string]any{}})
}

// sessionlessAsk sends one 2026-07-28 request declaring the client capabilities caps, as raw HTTP
// (JSON answers only), and decodes the answer; err when none came.
func sessionlessAsk(ctx context.Context, url, token, id, method string, params, caps map[string]any) (int, map[string]json.RawMessage) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// rootsCaps are the client capabilities of a client with roots (the Go SDK's declares them).
func rootsCaps() map[string]any {
	return map[string]any{"roots": map[string]any{"listChanged": true}, "elicitation": map[string]any{}, "sampling": map[string]any{}}
}

// TestAttackAnswerStartupRequestNotFoldedIntoToolsList (item 2, a fake worker): the worker
// asks roots/list while gemgate's first call, a 2026-07-28 tools/list of a client that
// declared roots, is in flight. The client gets the tool list, not an input-required result, and the worker gets gemgate's
// answer (no roots) instead of losing it.
func TestAttackAnswerStartupRequestNotFoldedIntoToolsList(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-command", stubbornWorker(t)+" askatlist", "--read-only-tools", "peek,roots")
	code, out := sessionlessAsk(t.Context(), g.URL, g.Tokens["alice"], "1", "tools/list", nil, rootsCaps())
	if code != http.StatusOK || !strings.Contains(string(out["result"]), `"peek"`) || strings.Contains(string(out["result"]), "input_required") {
		t.Fatalf("the first tools/list: %d %s; want the tool list", code, jsonText(out))
	}
	pollUntil(t, 10*time.Second, "the worker's start-up roots/list answered with no roots", func() bool {
		_, out := sessionlessPost(t, g.URL, g.Tokens["alice"], "2", "tools/call", map[string]any{"name": "roots", "arguments": map[string]any{}})
		return strings.Contains(puField(string(out["result"]), "text"), `{"roots":[]}`)
	})
	waitAnswerAudit(t, g, map[string]any{"answered_by": "gemgate", "method": "roots/list", "answer": "no roots"})
}

// fsWorkerDir holds the official MCP filesystem server (npm ci --prefix test/fsworker).
const fsWorkerDir = "fsworker"

// fsWorker is the command line of the filesystem server serving dir, run with node.
func fsWorker(t *testing.T, dir string) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join(fsWorkerDir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		msg := "test/fsworker/node_modules lacks @modelcontextprotocol/server-filesystem; run `npm ci --prefix test/fsworker`"
		if os.Getenv("GEMGATE_TEST_REQUIRE_NODE") == "1" {
			t.Fatal(msg + " (GEMGATE_TEST_REQUIRE_NODE=1)")
		}
		t.Skip(msg)
	}
	return systemNode(t) + " " + script + " " + dir
}

// TestAttackAnswerFilesystemServerToolsList (item 2, the real worker): the official filesystem
// server asks its client roots/list right after notifications/initialized when told the client
// has roots. Fresh workers of it (three identities, two gemgate starts) each answer the first
// 2026-07-28 tools/list (of a client that declared roots, as the Go SDK's does) with their
// tool list, never an input-required result, and keep the
// directory they were started with.
func TestAttackAnswerFilesystemServerToolsList(t *testing.T) {
	t.Parallel()
	dir := searchableTempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	worker := fsWorker(t, dir)
	for start := range 2 {
		g := startDev(t, "--worker-command", worker, "--read-only-tools", "list_allowed_directories,list_directory,read_text_file")
		for _, who := range []struct{ name, token string }{
			{"alice", g.Tokens["alice"]}, {"alice read-only", puToken(t, g, "alice", "mcp:use")}, {"bob", g.Tokens["bob"]},
		} {
			code, out := sessionlessAsk(t.Context(), g.URL, who.token, "1", "tools/list", nil, rootsCaps())
			res := string(out["result"])
			if code != http.StatusOK || strings.Contains(res, "input_required") || !strings.Contains(res, "list_allowed_directories") {
				t.Errorf("start %d, %s: the first tools/list of a fresh filesystem worker: %d %s; want its tool list", start, who.name, code, jsonText(out))
				continue
			}
			_, out = sessionlessPost(t, g.URL, who.token, "2", "tools/call", map[string]any{"name": "list_allowed_directories", "arguments": map[string]any{}})
			if got := puField(string(out["result"]), "text"); !strings.Contains(got, filepath.Base(dir)) {
				t.Errorf("start %d, %s: the worker's allowed directories %q; want %s", start, who.name, got, dir)
			}
		}
		g.stop(t)
	}
}
