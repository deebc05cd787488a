//go:build linux

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// turnHeld reports whether a caller holds the turn to write to the worker's stdin.
func (p *Process) turnHeld() bool { return len(p.turn) > 0 }

// startHeld starts the held worker, which reads nothing until released (release), and waits
// until it is ready to be; lines are the lines it writes, as traced.
func startHeld(t *testing.T) (p *Process, release func(), lines func() []string) {
	t.Helper()
	ready := make(chan struct{})
	var mu sync.Mutex
	var traced []string
	p = startSpec(t, "held", Spec{
		OnMessage: func(m *jsonrpc.Message) {
			if m.Method == "held" {
				close(ready)
			}
		},
		OnTrace: func(direction string, line []byte) {
			mu.Lock()
			traced = append(traced, direction+" "+string(line))
			mu.Unlock()
		},
	})
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the held worker never said it was ready")
	}
	release = sync.OnceFunc(func() { syscall.Kill(p.Pid(), syscall.SIGUSR1) })
	lines = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(traced)
	}
	return p, release, lines
}

// waitUntil polls cond until it holds, failing the test after a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

type sendResult struct {
	id   string
	call *Call
	err  error
}

// sendAsync sends a request with the given client id in a goroutine of its own; params, if
// not empty, are its params.
func sendAsync(ctx context.Context, p *Process, id, method, params string, out chan<- sendResult) {
	req := &jsonrpc.Message{ID: json.RawMessage(id), Method: method}
	if params != "" {
		req.Params = json.RawMessage(params)
	}
	go func() {
		c, err := p.Send(ctx, req, nil)
		out <- sendResult{id, c, err}
	}()
}

// answerOf waits for a sent call's answer and checks that it carries the caller's id.
func answerOf(t *testing.T, r sendResult) *jsonrpc.Message {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Send %s: %v", r.id, r.err)
	}
	select {
	case m := <-r.call.Result():
		if string(m.ID) != r.id || m.Result == nil {
			t.Fatalf("call %s answered %s", r.id, m.Encode())
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer to call %s", r.id)
		return nil
	}
}

func receive(t *testing.T, ch <-chan sendResult) sendResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("a Send never returned")
		return sendResult{}
	}
}

// A line whose caller gives up while another line is being written is never written; the
// line sent after it still is. The first line fills the pipe of a worker that reads nothing
// until released, so that the lines after it wait for their turn. The caller that gives up
// does so at its deadline, while it waits for its turn (not before it asks for one), queued
// behind the first line and before the line sent after it.
func TestGivenUpLineIsNeverWritten(t *testing.T) {
	p, release, lines := startHeld(t)
	results := make(chan sendResult, 3)
	sendAsync(t.Context(), p, "1", "ping", `{"pad":"`+strings.Repeat("x", 1<<20)+`"}`, results)
	waitUntil(t, "the first write holds the turn", p.turnHeld)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	gaveUp := make(chan sendResult, 1)
	sendAsync(ctx, p, `"given-up"`, "ping", `{"key":"given-up"}`, gaveUp)
	sendAsync(t.Context(), p, "3", "ping", "", results)
	if r := receive(t, gaveUp); !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("Send that gave up = %v, want context.DeadlineExceeded", r.err)
	}
	release()
	answerOf(t, receive(t, results))
	answerOf(t, receive(t, results))
	// Its answer would have come before this one's.
	sendAsync(t.Context(), p, "4", "ping", "", results)
	answerOf(t, receive(t, results))
	for _, l := range lines() {
		if strings.Contains(l, "given-up") {
			t.Errorf("the line given up was traced as written, or answered: %s", l)
		}
	}
	p.mu.Lock()
	pending := len(p.pending)
	p.mu.Unlock()
	if pending != 0 {
		t.Errorf("%d calls still pending, want none", pending)
	}
}

// Lines waiting behind a write to a worker that stopped reading fail with ErrHung, within the
// write timeout, instead of waiting for good.
func TestWaitingLinesFailWhenTheWorkerHangs(t *testing.T) {
	p := startSpec(t, "deaf", Spec{WriteTimeout: 100 * time.Millisecond})
	big := `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	first := make(chan sendResult, 1)
	sendAsync(t.Context(), p, `"big"`, "tools/call", big, first)
	waitUntil(t, "the big write holds the turn", p.turnHeld)
	const n = 5
	results := make(chan sendResult, n)
	for i := range n {
		sendAsync(t.Context(), p, strconv.Itoa(i), "ping", "", results)
	}
	if r := receive(t, first); !errors.Is(r.err, ErrHung) {
		t.Errorf("the big Send = %v, want ErrHung", r.err)
	}
	for range n {
		if r := receive(t, results); !errors.Is(r.err, ErrHung) {
			t.Errorf("waiting Send %s = %v, want ErrHung", r.id, r.err)
		}
	}
}
