//go:build linux

package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// turnHeld reports whether a caller holds the turn to write to the worker's stdin.
func (p *Process) turnHeld() bool { return len(p.turn) > 0 }

// heldStdin wraps a worker's stdin: it keeps a copy of what each Write was given, and holds
// the first Write until released, as a worker busy reading something else would.
type heldStdin struct {
	stdinFile
	mu      sync.Mutex
	writes  [][]byte
	held    chan struct{} // closed once the first Write waits
	release func()        // lets the first Write go on
	hold    chan struct{}
}

func newHeldStdin(t *testing.T) *heldStdin {
	h := &heldStdin{held: make(chan struct{}), hold: make(chan struct{})}
	h.release = sync.OnceFunc(func() { close(h.hold) })
	t.Cleanup(h.release) // before the worker's Stop: Cleanup runs last in, first out
	return h
}

func (h *heldStdin) Write(b []byte) (int, error) {
	h.mu.Lock()
	first := len(h.writes) == 0
	h.writes = append(h.writes, bytes.Clone(b))
	h.mu.Unlock()
	if first {
		close(h.held)
		<-h.hold
	}
	return h.stdinFile.Write(b)
}

func (h *heldStdin) all() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.writes...)
}

// startHeld starts the echo worker with its stdin wrapped by a heldStdin.
func startHeld(t *testing.T, spec Spec) (*Process, *heldStdin) {
	t.Helper()
	h := newHeldStdin(t)
	spec.wrapStdin = func(f stdinFile) stdinFile { h.stdinFile = f; return h }
	return startSpec(t, "echo", spec), h
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
// line sent after it still is.
func TestGivenUpLineIsNeverWritten(t *testing.T) {
	p, h := startHeld(t, Spec{})
	results := make(chan sendResult, 3)
	sendAsync(t.Context(), p, "1", "ping", "", results)
	<-h.held
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan sendResult, 1)
	sendAsync(ctx, p, `"given-up"`, "given-up", "", gaveUp)
	sendAsync(t.Context(), p, "3", "ping", "", results)
	cancel()
	if r := receive(t, gaveUp); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Send that gave up = %v, want context.Canceled", r.err)
	}
	h.release()
	answerOf(t, receive(t, results))
	answerOf(t, receive(t, results))
	for _, w := range h.all() {
		if bytes.Contains(w, []byte("given-up")) {
			t.Errorf("the line given up was written: %q", w)
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
