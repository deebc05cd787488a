//go:build linux

package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// turnHeld reports whether a caller holds the turn to write to the worker's stdin.
func (p *Process) turnHeld() bool {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.writing
}

// queuedWrites is how many lines wait for the next turn.
func (p *Process) queuedWrites() int {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return len(p.queue)
}

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

// Lines that wait while the worker's stdin is busy go out together, in one write, each whole,
// and each call still gets its own answer.
func TestQueuedLinesShareOneWrite(t *testing.T) {
	p, h := startHeld(t, Spec{})
	const n = 16
	results := make(chan sendResult, n)
	sendAsync(t.Context(), p, "0", "ping", "", results)
	select {
	case <-h.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first write never started")
	}
	for i := 1; i < n; i++ {
		sendAsync(t.Context(), p, strconv.Itoa(i), "ping", "", results)
	}
	waitUntil(t, "every later line is queued", func() bool { return p.queuedWrites() == n-1 })
	h.release()
	seen := map[string]bool{}
	for range n {
		r := receive(t, results)
		answerOf(t, r)
		seen[r.id] = true
	}
	if len(seen) != n {
		t.Fatalf("answers to %d distinct calls, want %d", len(seen), n)
	}
	writes := h.all()
	if len(writes) != 2 {
		t.Errorf("%d writes for %d lines, want 2: the first, then the %d queued behind it", len(writes), n, n-1)
	}
	lines := 0
	for _, w := range writes {
		if !bytes.HasSuffix(w, []byte("\n")) {
			t.Errorf("a write ends inside a line: %q", w)
		}
		lines += bytes.Count(w, []byte("\n"))
	}
	if lines != n {
		t.Errorf("%d lines written, want %d", lines, n)
	}
}

// A queued line whose caller gives up before its turn is never written; the lines queued
// behind it still are.
func TestGivenUpLineIsNeverWritten(t *testing.T) {
	p, h := startHeld(t, Spec{})
	results := make(chan sendResult, 3)
	sendAsync(t.Context(), p, "1", "ping", "", results)
	<-h.held
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan sendResult, 1)
	sendAsync(ctx, p, `"given-up"`, "given-up", "", gaveUp)
	waitUntil(t, "the line to give up is queued", func() bool { return p.queuedWrites() == 1 })
	sendAsync(t.Context(), p, "3", "ping", "", results)
	waitUntil(t, "the line after it is queued", func() bool { return p.queuedWrites() == 2 })
	cancel()
	if r := receive(t, gaveUp); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Send that gave up = %v, want context.Canceled", r.err)
	}
	if q := p.queuedWrites(); q != 1 {
		t.Fatalf("%d lines queued after one gave up, want 1", q)
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

// A combined write holds at most batchBytes; a longer line is written alone, and order is kept.
func TestLongLinesAreWrittenAlone(t *testing.T) {
	p, h := startHeld(t, Spec{})
	big := func(n int) string { return `{"pad":"` + strings.Repeat("x", n) + `"}` }
	results := make(chan sendResult, 6)
	sendAsync(t.Context(), p, "0", "ping", "", results)
	<-h.held
	queue := []struct{ id, params string }{
		{"1", ""},
		{"2", big(100 << 10)},
		{"3", ""},
		{"4", ""},
		{"5", big(200 << 10)},
	}
	for i, q := range queue {
		sendAsync(t.Context(), p, q.id, "ping", q.params, results)
		waitUntil(t, "line "+q.id+" is queued", func() bool { return p.queuedWrites() == i+1 })
	}
	h.release()
	for range 6 {
		answerOf(t, receive(t, results))
	}
	// The first; 1 (2 does not fit with it); 2 alone; 3 and 4 together; 5 alone.
	var got []int
	var order []string
	for _, w := range h.all() {
		n := bytes.Count(w, []byte("\n"))
		got = append(got, n)
		if n > 1 && len(w) > batchBytes {
			t.Errorf("a combined write of %d bytes, over %d", len(w), batchBytes)
		}
		for line := range bytes.Lines(w) {
			m, err := jsonrpc.Parse(bytes.TrimSuffix(line, []byte("\n")), jsonrpc.Options{})
			if err != nil {
				t.Fatalf("a line written is not a message: %v", err)
			}
			order = append(order, string(m.ID))
		}
	}
	if want := []int{1, 1, 1, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("lines per write = %v, want %v", got, want)
	}
	if want := []string{"1", "2", "3", "4", "5", "6"}; !slices.Equal(order, want) {
		t.Errorf("worker ids in the order written = %v, want %v", order, want)
	}
}

// Lines queued behind a write to a worker that stopped reading fail with ErrHung, within the
// write timeout, instead of waiting for good.
func TestQueuedLinesFailWhenTheWorkerHangs(t *testing.T) {
	p := startSpec(t, "deaf", Spec{WriteTimeout: 300 * time.Millisecond})
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
			t.Errorf("queued Send %s = %v, want ErrHung", r.id, r.err)
		}
	}
}

// A caller handed the turn just as it gives up writes nothing: the turn goes to the next line.
func TestTurnPassesWhenItsHolderGivesUp(t *testing.T) {
	a := &queuedLine{line: []byte("a\n"), out: make(chan error, 1)}
	b := &queuedLine{line: []byte("b\n"), out: make(chan error, 1)}
	p := &Process{writing: true, queue: []*queuedLine{a, b}}
	p.passTurn() // the turn in progress ends: a holds the next one
	if a.state != lineHasTurn {
		t.Fatalf("the first queued line's state = %d, want lineHasTurn", a.state)
	}
	if err := p.withdrawLine(a, context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("withdrawLine = %v, want context.Canceled", err)
	}
	select {
	case err := <-b.out:
		if err != errYourTurn {
			t.Errorf("the next line got %v, want its turn", err)
		}
	default:
		t.Fatal("the turn was not passed on")
	}
	if !p.writing || len(p.queue) != 1 || p.queue[0] != b {
		t.Errorf("writing %v, queue %d lines; want the turn held and b alone queued", p.writing, len(p.queue))
	}
}
