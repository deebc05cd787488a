//lint:file-ignore SA1019 sampling and logging are deprecated from 2026-07-28 but part of 2025-11-25, which gemgate serves: the client here exercises them on purpose.

package test

// Server-initiated messages through the gateway: elicitation and sampling round trips,
// progress and logging during a call, list changes, cancellation and the request deadline.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestElicitationRoundTrip(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	for _, tc := range []struct {
		action      string
		wantDeleted bool
		wantText    string
	}{
		{action: "accept", wantDeleted: true, wantText: `deleted note "n-accept"`},
		{action: "decline", wantDeleted: false, wantText: `answered "decline"`},
	} {
		t.Run(tc.action, func(t *testing.T) {
			var asked atomic.Int32
			cs := connect(t, g.URL, g.Tokens["alice"], &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					if !strings.Contains(req.Params.Message, "n-"+tc.action) {
						return nil, errors.New("unexpected elicitation: " + req.Params.Message)
					}
					return &mcp.ElicitResult{Action: tc.action}, nil
				},
			})
			name := "n-" + tc.action
			if res := callTool(t, cs, "write_note", map[string]any{"name": name, "text": "keep me?"}); res.IsError {
				t.Fatalf("write_note: %s", text(res))
			}
			res := callTool(t, cs, "delete_note", map[string]any{"name": name})
			if res.IsError || !strings.Contains(text(res), tc.wantText) {
				t.Errorf("delete_note = %q (isError %v), want it to contain %q", text(res), res.IsError, tc.wantText)
			}
			if asked.Load() != 1 {
				t.Errorf("the client was asked %d times, want 1", asked.Load())
			}
			got := callTool(t, cs, "read_note", map[string]any{"name": name})
			if kept := !got.IsError && strings.Contains(text(got), "keep me?"); kept == tc.wantDeleted {
				t.Errorf("after %s: read_note = %q (isError %v); want deleted=%v", tc.action, text(got), got.IsError, tc.wantDeleted)
			}
		})
	}
}

// TestElicitationTravelsOnGETStream watches the wire: the worker's elicitation/create goes
// down the session's GET stream with an id of the gateway's, and the client's answer, POSTed
// back with that id, reaches the worker.
func TestElicitationTravelsOnGETStream(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	s := ltOpen(t, g, g.Tokens["alice"], map[string]any{"elicitation": map[string]any{}})
	s.tool("write_note", map[string]any{"name": "wire", "text": "x"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := s.stream(ctx)

	type result struct {
		m      ltMsg
		before []ltMsg
		err    error
	}
	done := make(chan result, 1)
	go func() {
		m, before, _, err := s.call(ctx, "del-1", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "wire"}})
		done <- result{m, before, err}
	}()
	req := ltNext(t, events, 10*time.Second, "elicitation/create on the GET stream", func(m ltMsg) bool { return m.Method == "elicitation/create" })
	var gid string
	if json.Unmarshal(req.ID, &gid) != nil || !strings.HasPrefix(gid, "gemgate-") {
		t.Errorf("elicitation/create id = %s, want a string in the gateway's gemgate- namespace", req.ID)
	}
	if code := s.respond(req.ID, map[string]any{"action": "accept", "content": map[string]any{}}); code != http.StatusAccepted {
		t.Errorf("POST of the client's answer: status %d, want 202", code)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if string(r.m.ID) != `"del-1"` || r.m.Error != nil || !strings.Contains(string(r.m.Result), `deleted note`) {
			t.Errorf("delete_note answer = id %s result %s error %+v", r.m.ID, r.m.Result, r.m.Error)
		}
		for _, m := range r.before {
			if m.Method == "elicitation/create" {
				t.Errorf("elicitation/create also went down the POST stream")
			}
		}
	case <-time.After(15 * time.Second):
		t.Fatal("delete_note did not finish after the client accepted")
	}
}

func TestSamplingRoundTrip(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	var prompt atomic.Value
	cs := connect(t, g.URL, g.Tokens["alice"], &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					prompt.Store(tc.Text)
				}
			}
			return &mcp.CreateMessageResult{Model: "fixed", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	})
	res := callTool(t, cs, "ask_model", map[string]any{"prompt": "what is six times seven?"})
	if res.IsError || text(res) != "forty-two" {
		t.Errorf("ask_model = %q (isError %v), want the client's fixed answer", text(res), res.IsError)
	}
	if p, _ := prompt.Load().(string); p != "what is six times seven?" {
		t.Errorf("the client was asked %q", p)
	}
}

// TestStreamProgressOnPOSTStream: progress tied to a request goes on that request's SSE
// response, carrying the client's token, and not down the session's GET stream.
func TestStreamProgressOnPOSTStream(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	s := ltOpen(t, g, g.Tokens["alice"], nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := s.stream(ctx)
	m, before, ct, err := s.call(ctx, 7, "tools/call", map[string]any{
		"name": "slow", "arguments": map[string]any{"seconds": 2, "progress": true},
		"_meta": map[string]any{"progressToken": "tok-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q, want an SSE response for a call with progress", ct)
	}
	if string(m.ID) != "7" || m.Error != nil {
		t.Errorf("answer id %s error %+v", m.ID, m.Error)
	}
	var progress int
	for _, ev := range before {
		if ev.Method != "notifications/progress" {
			continue
		}
		progress++
		var p struct {
			ProgressToken any `json:"progressToken"`
		}
		json.Unmarshal(ev.Params, &p)
		if p.ProgressToken != "tok-1" {
			t.Errorf("progress token = %v, want tok-1", p.ProgressToken)
		}
	}
	if progress != 2 {
		t.Errorf("%d progress notifications on the POST stream, want 2", progress)
	}
	select {
	case ev := <-events:
		t.Errorf("GET stream carried %s %s during the call", ev.Method, ev.Params)
	default:
	}
}

// TestStreamProgressAndLoggingWithSDK: the Go SDK client's handlers see progress and the
// log lines of a call.
func TestStreamProgressAndLoggingWithSDK(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	var progress, logs atomic.Int32
	cs := connect(t, g.URL, g.Tokens["alice"], &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params.ProgressToken == "p-1" {
				progress.Add(1)
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if s, _ := req.Params.Data.(string); strings.HasPrefix(s, "slow: ") {
				logs.Add(1)
			}
		},
	})
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 2, "progress": true, "log": true}}
	params.SetProgressToken("p-1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("slow: %v %v", err, res)
	}
	// Notifications are handled asynchronously by the client; give them a moment.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && (progress.Load() < 2 || logs.Load() < 2) {
		time.Sleep(20 * time.Millisecond)
	}
	if progress.Load() != 2 || logs.Load() != 2 {
		t.Errorf("client saw %d progress notifications and %d log messages, want 2 and 2", progress.Load(), logs.Load())
	}
}

// TestStreamListChangedOnGETStream: a list change not tied to a request reaches the client
// on its GET stream, both in the SDK client's handler and on the wire.
func TestStreamListChangedOnGETStream(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	changed := make(chan struct{}, 8)
	cs := connect(t, g.URL, g.Tokens["alice"], &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	callTool(t, cs, "toggle_extra_tool", nil)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("ToolListChangedHandler did not fire")
	}

	s := ltOpen(t, g, g.Tokens["alice"], nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := s.stream(ctx)
	_, before, _, err := s.call(ctx, "tg", "tools/call", map[string]any{"name": "toggle_extra_tool", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range before {
		if m.Method == "notifications/tools/list_changed" {
			t.Errorf("list_changed went down the POST stream")
		}
	}
	ltNext(t, events, 10*time.Second, "notifications/tools/list_changed on the GET stream",
		func(m ltMsg) bool { return m.Method == "notifications/tools/list_changed" })
}

// TestRequestTimeoutAnswersClientID: with request_timeout 2s a 10-second call is answered
// -32001 bearing the client's own id, within about 3 s, the worker is told to stop, and the
// session stays usable.
func TestRequestTimeoutAnswersClientID(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--request-timeout", "2s")
	s := ltOpen(t, g, g.Tokens["alice"], nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	m, _, _, err := s.call(ctx, "client-id-77", "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 10}})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if m.Error == nil || m.Error.Code != -32001 {
		t.Errorf("answer = result %s error %+v, want error -32001", m.Result, m.Error)
	}
	if string(m.ID) != `"client-id-77"` {
		t.Errorf("answer id = %s, want the client's own \"client-id-77\"", m.ID)
	}
	// Not before the timeout; after it, within 3x the slack seen on loaded cores (~1 s).
	if took < 1900*time.Millisecond || took > 5*time.Second {
		t.Errorf("answered after %v, want about 2s", took)
	}
	ltWaitLog(t, g, "slow: cancelled", 10*time.Second)
	if got := string(s.tool("echo", map[string]any{"text": "after timeout"})); !strings.Contains(got, "after timeout") {
		t.Errorf("echo after the timeout = %s", got)
	}
}
