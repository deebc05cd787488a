package pool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// POOL_TEST_WORKER=sessionless plays a worker that speaks only the sessionless revision: it
// answers server/discover, refuses initialize, keeps a subscriptions/listen open, and answers
// every other request with the methods it has seen and whether this request carried the
// sessionless _meta. Dispatched before TestMain, so the scripted worker stays as it is.
func init() {
	if os.Getenv("POOL_TEST_WORKER") == "sessionless" {
		os.Exit(sessionlessWorker())
	}
}

func sessionlessWorker() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	var seen []string
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil || msg.Method == "" {
			continue
		}
		version := string(msg.Params.Meta["io.modelcontextprotocol/protocolVersion"])
		seen = append(seen, msg.Method+"@"+version)
		switch msg.Method {
		case "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "no initialize in 2026-07-28"}})
		case "server/discover":
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{
				"supportedVersions": []string{SessionlessVersion}, "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
				"resultType": "complete", "_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]string{"name": "sl", "version": "0"}},
			}})
		case "subscriptions/listen":
			// open for the worker's life
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{"seen": seen}})
		}
	}
	return 0
}

var alice = Identity{Issuer: "iss", Subject: "alice", User: "alice"}

// A sessionless attach opens the worker the 2026-07-28 way: server/discover naming the
// revision, never initialize, then one subscriptions/listen of gemgate's own; the discover
// answer stands for the InitializeResult, requests go as they are, and gemgate's own
// requests (Ask) carry the revision's _meta. The pool learns that the program speaks it.
func TestSessionlessAttach(t *testing.T) {
	p, err := New(Options{Launcher: scriptLauncher{mode: "sessionless"}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if known, _ := p.SessionlessWorkers(); known {
		t.Fatal("known before any worker started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	m, res, err := p.Attach(ctx, Attach{Identity: alice, Caller: newCaller(time.Now()), Sessionless: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Detach()
	if !m.AttachedSessionless() || !strings.Contains(string(res), `"supportedVersions":["2026-07-28"]`) {
		t.Errorf("attach: sessionless worker %v, result %s", m.AttachedSessionless(), res)
	}
	if known, yes := p.SessionlessWorkers(); !known || !yes {
		t.Errorf("SessionlessWorkers = %v, %v after a sessionless start", known, yes)
	}
	req := &jsonrpc.Message{ID: json.RawMessage(`"c1"`), Method: "tools/list", Params: json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)}
	call, err := m.Call(ctx, Request{Message: req, Identity: alice})
	if err != nil {
		t.Fatal(err)
	}
	var resp *jsonrpc.Message
	select {
	case resp = <-call.Result():
	case <-ctx.Done():
		t.Fatal("no answer")
	}
	want := `["server/discover@\"2026-07-28\"","subscriptions/listen@\"2026-07-28\"","tools/list@\"2026-07-28\""]`
	if string(resp.ID) != `"c1"` || !strings.Contains(string(resp.Result), want) {
		t.Errorf("answer %s, want id \"c1\" and seen %s", resp.Encode(), want)
	}
	asked, ok := m.Ask(ctx, nil, "tools/list", json.RawMessage(`{}`))
	if !ok || !strings.Contains(string(asked), `"tools/list@\"2026-07-28\"","tools/list@\"2026-07-28\""`) {
		t.Errorf("Ask without the revision's _meta: %s", asked)
	}
}

// A worker program that does not take a 2026-07-28 server/discover fails a sessionless attach
// with ErrNotSessionless and is stopped; the pool learns that the program does not speak it.
func TestSessionlessAttachRefusedByLegacyWorker(t *testing.T) {
	p := newTestPool(t, Settings{})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, _, err := p.Attach(ctx, Attach{Identity: alice, Caller: newCaller(time.Now()), Sessionless: true})
	if !errors.Is(err, ErrNotSessionless) {
		t.Fatalf("attach: %v, want ErrNotSessionless", err)
	}
	if known, yes := p.SessionlessWorkers(); !known || yes {
		t.Errorf("SessionlessWorkers = %v, %v, want known and no", known, yes)
	}
	if n := workers(p); n != 0 {
		t.Errorf("%d workers left running", n)
	}
	m, _, err := p.Attach(ctx, Attach{Identity: alice, Caller: newCaller(time.Now()), Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)})
	if err != nil || m.AttachedSessionless() {
		t.Fatalf("legacy attach after: %v", err)
	}
	m.Detach()
}
