package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// waitLog waits for a log line that has every one of parts.
func waitLog(t *testing.T, f *fixture, parts ...string) {
	t.Helper()
	eventually(t, 10*time.Second, "a log line with "+strings.Join(parts, " "), func() bool {
		for line := range strings.SplitSeq(f.log.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

// stubbornFixture serves the stubborn worker per user, with its peek vouched for read-only.
func stubbornFixture(t *testing.T, mode string) *fixture {
	return newFixture(t, func(o *Options) {
		pol, err := policy.New(policy.Config{ReadOnlyTools: []string{"peek", "roots"}})
		if err != nil {
			t.Fatal(err)
		}
		o.Policy = pol
		o.Workers = &testLauncher{mode: mode, dataDir: t.TempDir()}
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
}

// The attack of issue 35 item 1, in the legacy era: a read-write delete whose client went away
// (its session ended) keeps running in a worker that ignores notifications/cancelled, and
// reaches its confirmation while the only call gemgate is waiting for is a read-only peek,
// made with the user's read-only token on another of the user's read-write sessions. The
// confirmation must not go down the peek's stream, and no "accept" of the read-only token may
// reach the worker: gemgate still counts the abandoned delete, so the question is no call's,
// and with no session stream to ask on, gemgate answers it itself (cancel), audited.
func TestAbandonedReadWriteConfirmationNeverReachesReadOnlyToken(t *testing.T) {
	f := stubbornFixture(t, "stubborn")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := f.client("alice-rw")
	openWithElicitation(t, a)
	del := a.postStreaming(ctx, rpcBody(`"del"`, "tools/call", map[string]any{"name": "delete", "arguments": map[string]any{}}))
	defer del.Body.Close()
	if del.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d", del.StatusCode)
	}
	if _, ok := nextEvent(t, readEvents(del.Body)); !ok { // its log line: the worker runs it
		t.Fatal("delete's stream ended at once")
	}
	if r := a.request(ctx, http.MethodDelete, ""); r.status != http.StatusOK {
		t.Fatalf("ending the delete's session: %d", r.status)
	}

	b := f.client("alice-rw")
	openWithElicitation(t, b)
	ro := &client{f: f, token: "alice-ro", session: b.session, version: b.version}
	peek := ro.postStreaming(ctx, rpcBody(`"peek"`, "tools/call", map[string]any{"name": "peek", "arguments": map[string]any{}}))
	defer peek.Body.Close()
	if peek.StatusCode != http.StatusOK {
		t.Fatalf("peek with the read-only token: %d", peek.StatusCode)
	}
	evs := readEvents(peek.Body)
	var final *jsonrpc.Message
	for final == nil {
		ev, ok := nextEvent(t, evs)
		if !ok {
			t.Fatal("peek's stream ended without its answer")
		}
		m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{})
		if err != nil {
			continue
		}
		if m.Method == "elicitation/create" {
			st := ro.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{}}}`, m.ID)).status
			t.Errorf("the abandoned read-write delete's confirmation went down the read-only peek's stream; the read-only token's accept: %d", st)
		}
		if m.IsResponse() {
			final = m
		}
	}
	if got := toolText(t, final); !strings.Contains(got, `"cancel"`) {
		t.Errorf("the worker's confirmation was answered %q; want gemgate's cancel", got)
	}
	waitLog(t, f, `"msg":"audit worker request"`, `"answered_by":"gemgate"`, `"worker_read_only":false`)
}

// The read-write client answers the delete's confirmation and the audit line says who: the
// client, with its token's access; a read-only token's try at the same answer is refused 403
// and audited as refused.
func TestWorkerRequestAnswerIsAudited(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
	rw := f.client("alice-rw")
	openWithElicitation(t, rw)
	if r := rw.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusOK {
		t.Fatalf("write_note: %d", r.status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := rw.postStreaming(ctx, rpcBody(`"del"`, "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}}))
	defer resp.Body.Close()
	evs := readEvents(resp.Body)
	var ask *jsonrpc.Message
	for ask == nil {
		ev, ok := nextEvent(t, evs)
		if !ok {
			t.Fatal("delete_note's stream ended without an elicitation")
		}
		if m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{}); err == nil && m.Method == "elicitation/create" {
			ask = m
		}
	}
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	if st := ro.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{}}}`, ask.ID)).status; st != http.StatusForbidden {
		t.Errorf("the read-only token's answer: %d, want 403", st)
	}
	waitLog(t, f, `"msg":"audit worker request"`, `"answered_by":"client"`, `"read_only":true`, `"outcome":"refused"`)
	if st := rw.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, ask.ID)).status; st != http.StatusAccepted {
		t.Errorf("the read-write token's answer: %d, want 202", st)
	}
	waitLog(t, f, `"msg":"audit worker request"`, `"method":"elicitation/create"`, `"answered_by":"client"`,
		`"read_only":false`, `"worker_read_only":false`, `"outcome":"answered"`, `"user":"alice"`)
}

// Issue 35 item 2 with a fake worker: a legacy worker asks its client roots/list at start-up,
// while gemgate's first call, a 2026-07-28 tools/list, is in flight. A tools/list cannot ask
// anything: the request is no call's, so the client gets its tool list (not an input-required
// result), and the worker gets gemgate's fail-safe answer (no roots) instead of losing it.
func TestSessionlessToolsListIsNotFoldedWithStartupRequest(t *testing.T) {
	f := stubbornFixture(t, "askatlist")
	c := f.client("alice-rw")
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"roots": map[string]any{}, "elicitation": map[string]any{}}
	r := c.sessionless("1", "tools/list", map[string]any{"_meta": meta})
	var list struct {
		ResultType string            `json:"resultType"`
		Tools      []json.RawMessage `json:"tools"`
	}
	if m := r.only(t); m.Error != nil || json.Unmarshal(m.Result, &list) != nil || list.ResultType == "input_required" || len(list.Tools) == 0 {
		t.Fatalf("the first tools/list: %d %s; want the tool list", r.status, r.body)
	}
	eventually(t, 10*time.Second, "the worker's roots/list answered by gemgate", func() bool {
		m := c.sessionless("2", "tools/call", map[string]any{"name": "roots", "arguments": map[string]any{}, "_meta": meta}).only(t)
		return m.Error == nil && strings.Contains(toolText(t, m), `{"roots":[]}`)
	})
}

// The same attack in the 2026-07-28 era, where gemgate parks a legacy worker's question as
// the input-required result of the call it belongs to: a delete whose client went away keeps
// running in the stubborn worker, and its confirmation comes while another request of the
// user's, a peek, is the only one gemgate waits for. gemgate still counts the abandoned delete,
// so the question is no call's: it is not parked as the peek's input-required result (whose
// client's "accept" would reach the worker), and gemgate answers it itself, cancelled.
func TestSessionlessAbandonedConfirmationIsNotAnotherCallsInput(t *testing.T) {
	f := stubbornFixture(t, "stubborn")
	c := f.client("alice-rw")
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "del", "method": "tools/call",
			"params": map[string]any{"name": "delete", "arguments": map[string]any{}, "_meta": meta}})
		_, _ = c.do(ctx, http.MethodPost, string(b), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "delete")
	}()
	waitLog(t, f, `stubborn: deleting`)
	cancel() // the delete's client goes away
	<-done
	r := c.sessionless("3", "tools/call", map[string]any{"name": "peek", "arguments": map[string]any{}, "_meta": meta})
	m := r.only(t)
	var res struct {
		ResultType string `json:"resultType"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		t.Fatalf("peek: %d %s", r.status, r.body)
	}
	if res.ResultType == "input_required" {
		t.Fatalf("the abandoned delete's confirmation was parked as the peek's input: %s", r.body)
	}
	if got := toolText(t, m); !strings.Contains(got, `"cancel"`) {
		t.Errorf("the worker's confirmation was answered %q; want gemgate's cancel", got)
	}
	waitLog(t, f, `"msg":"audit worker request"`, `"answered_by":"gemgate"`)
}
