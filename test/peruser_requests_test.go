//lint:file-ignore SA1019 sampling and logging are deprecated from 2026-07-28 but part of 2025-11-25, which gemgate serves: the client here exercises them on purpose.

package test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// puStreams waits until gemgate has n session GET streams open.
func puStreams(t *testing.T, g *gemgate, n float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ltSum(ltMetrics(t, g), "gemgate_sse_streams_open") == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("gemgate does not have %v GET streams open", n)
}

// puBusy starts a slow call on a raw session with no capability, so that the capable
// session's call is not the only one at the worker: the worker's request is then routed by
// capability and activity, not by the sole-call rule. It returns the raw session, the
// messages of its GET stream, and the messages of its call's POST response.
func puBusy(t *testing.T, g *gemgate, ctx context.Context) (*ltRaw, <-chan ltMsg, <-chan ltMsg) {
	t.Helper()
	b := ltOpen(t, g, g.Tokens["alice"], nil)
	_, stream := b.stream(ctx)
	call := puPost(ctx, b, 1, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 120}})
	puWaitStarted(t, g, "slow: started", 1, 20*time.Second)
	return b, stream, call
}

// puNoRequest fails if a worker request (a message with a method and an id) is on ch now.
func puNoRequest(t *testing.T, who string, ch <-chan ltMsg) {
	t.Helper()
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return
			}
			if m.Method != "" && len(m.ID) > 0 {
				t.Errorf("%s, which cannot answer it, got the worker's %s", who, m.Method)
			}
		default:
			return
		}
	}
}

// TestPerUserSamplingAndElicitationReachTheRightSession: with two sessions of one user on one
// worker, the one that declared sampling and elicitation and makes the only call at the
// worker gets the worker's sampling/createMessage (ask_model) and elicitation/create
// (delete_note), and the other, which declared neither but holds a GET stream, never sees
// them. Once the other session has a call in flight too, the worker's question could be
// either call's: it is asked of neither session (gemgate answers it), and ask_model fails
// promptly instead of being answered by a client it was not asked of.
func TestPerUserSamplingAndElicitationReachTheRightSession(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--metrics-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var samples, elicits atomic.Int32
	a := connect(t, g.URL, g.Tokens["alice"], &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			samples.Add(1)
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "the model of session A"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicits.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	callTool(t, a, "write_note", map[string]any{"name": "doomed", "text": "x"})
	b := ltOpen(t, g, g.Tokens["alice"], nil)
	_, bStream := b.stream(ctx)
	if g.workerPID(t, a.ID()) != g.workerPID(t, b.id) {
		t.Fatal("the two sessions are not on one worker")
	}
	puStreams(t, g, 2)

	if got := text(callTool(t, a, "ask_model", map[string]any{"prompt": "hello"})); got != "the model of session A" || samples.Load() != 1 {
		t.Errorf("ask_model answered %q after %d sampling requests at A, want A's model's answer after 1", got, samples.Load())
	}
	if got := text(callTool(t, a, "delete_note", map[string]any{"name": "doomed"})); got != `deleted note "doomed"` || elicits.Load() != 1 {
		t.Errorf("delete_note answered %q after %d elicitations at A, want the note deleted after 1", got, elicits.Load())
	}
	puNoRequest(t, "session B's GET stream", bStream)

	bCall := puPost(ctx, b, 1, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 120}})
	puWaitStarted(t, g, "slow: started", 1, 20*time.Second)
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	res, err := a.CallTool(cctx, &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"prompt": "whose?"}})
	switch {
	case cctx.Err() != nil:
		t.Fatalf("ask_model with B's call in flight hung: %v", err)
	case err == nil && !res.IsError:
		t.Errorf("ask_model with B's call in flight was sampled: %q (%d sampling requests at A)", text(res), samples.Load())
	}
	if samples.Load() != 1 {
		t.Errorf("A was asked %d times in all, want once: the question B's call could have asked reached A", samples.Load())
	}
	if !g.waitLog(`"reason":"calls of several clients at the worker could have asked`, 5*time.Second) {
		t.Error("gemgate did not log that it answered the ambiguous question itself")
	}
	puNoRequest(t, "session B's GET stream", bStream)
	puNoRequest(t, "session B's call", bCall)
}

// TestPerUserWorkerRequestNobodyCanAnswer: two sessions, neither declaring sampling, both
// with a call in flight: the worker's sampling request is answered by gemgate with an error,
// and ask_model ends promptly with an error instead of hanging.
func TestPerUserWorkerRequestNobodyCanAnswer(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--metrics-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connect(t, g.URL, g.Tokens["alice"], nil)
	b, bStream, bCall := puBusy(t, g, ctx)
	if g.workerPID(t, c.ID()) != g.workerPID(t, b.id) {
		t.Fatal("the two sessions are not on one worker")
	}
	puStreams(t, g, 2)
	start := time.Now()
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	res, err := c.CallTool(cctx, &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"prompt": "anyone?"}})
	switch {
	case cctx.Err() != nil:
		t.Fatalf("ask_model hung: %v", err)
	case err == nil && !res.IsError:
		t.Errorf("ask_model succeeded with nobody to sample: %q", text(res))
	default:
		t.Logf("ask_model ended in %v: err %v, result %v", time.Since(start).Round(time.Millisecond), err, res)
	}
	if !g.waitLog(`"answered_by":"gemgate"`, 5*time.Second) {
		t.Error("gemgate did not log that it answered the worker's request itself")
	}
	puNoRequest(t, "session B's GET stream", bStream)
	puNoRequest(t, "session B's call", bCall)
	if got := text(callTool(t, c, "echo", map[string]any{"text": "still here"})); got != "still here" {
		t.Errorf("echo after the refused request answered %q", got)
	}
}

// TestPerUserWorkerRequestNotToASoleCallerWithoutTheCapability: the caller of the only call in
// flight gets the worker's requests, but only those it declared it can answer; a sampling
// request during the sole call of a session without sampling is answered by gemgate with an
// error at once, instead of waiting on a client that will never answer.
func TestPerUserWorkerRequestNotToASoleCallerWithoutTheCapability(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connect(t, g.URL, g.Tokens["alice"], nil) // declares no sampling
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	res, err := c.CallTool(cctx, &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"prompt": "anyone?"}})
	switch {
	case cctx.Err() != nil:
		t.Fatalf("ask_model hung: %v", err)
	case err == nil && !res.IsError:
		t.Errorf("ask_model succeeded with nobody to sample: %q", text(res))
	}
	if !g.waitLog(`"answered_by":"gemgate"`, 5*time.Second) {
		t.Error("gemgate did not log that it answered the worker's request itself")
	}
}

// TestPerUserElicitationNobodyCanAnswerIsCancelled: the shared worker was told gemgate relays
// elicitation, but the session at hand cannot answer one. gemgate answers for it as a user
// who made no choice ("cancel"), so delete_note's confirmation fails safe: nothing is deleted.
func TestPerUserElicitationNobodyCanAnswerIsCancelled(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	c := connect(t, g.URL, g.Tokens["alice"], nil) // declares no elicitation
	if res := callTool(t, c, "write_note", map[string]any{"name": "keep", "text": "still here"}); res.IsError {
		t.Fatalf("write_note: %s", text(res))
	}
	res := callTool(t, c, "delete_note", map[string]any{"name": "keep"})
	if res.IsError || !strings.Contains(text(res), `not deleted`) || !strings.Contains(text(res), "cancel") {
		t.Errorf("delete_note with nobody to confirm = %q (error %v), want not deleted, answered cancel", text(res), res.IsError)
	}
	if got := text(callTool(t, c, "read_note", map[string]any{"name": "keep"})); !strings.Contains(got, "still here") {
		t.Errorf("the note is gone: read_note = %q", got)
	}
	if !g.waitLog(`"answered_by":"gemgate"`, 5*time.Second) {
		t.Error("gemgate did not log that it answered the worker's request itself")
	}
}
