package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A worker that stops reading stdin must not pin its callers: the write that cannot finish
// fails within the write timeout, every pending call is answered with its caller's id, and
// the worker is stopped with a reason that says it hung.
func TestWorkerThatStopsReadingIsStopped(t *testing.T) {
	p := startSpec(t, "deaf", Spec{WriteTimeout: 100 * time.Millisecond})
	// A small request fits in the pipe and stays pending.
	first, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"first"`), Method: "ping"}, nil)
	if err != nil {
		t.Fatalf("first Send: %v", err)
	}
	// One larger than the pipe's buffer cannot be written while nobody reads.
	big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	sent := make(chan error, 1)
	go func() {
		_, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"big"`), Method: "tools/call", Params: big}, nil)
		sent <- err
	}()
	select {
	case err := <-sent:
		if !errors.Is(err, ErrHung) {
			t.Errorf("Send of the big request = %v, want ErrHung", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write to a worker that does not read never ended")
	}
	select {
	case m := <-first.Result():
		var e jsonrpc.RPCError
		if err := json.Unmarshal(m.Error, &e); err != nil || string(m.ID) != `"first"` {
			t.Fatalf("pending call: want an error with its own id, got %s", m.Encode())
		}
		if !strings.Contains(string(m.Error), "workerHung") {
			t.Errorf("pending call error = %s, want kind workerHung", m.Error)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pending call was never answered")
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the hung worker was not stopped")
	}
	if !errors.Is(p.Err(), ErrHung) {
		t.Errorf("Err = %v, want ErrHung", p.Err())
	}
	if _, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "ping"}, nil); err == nil {
		t.Error("Send to the stopped worker succeeded")
	}
}

// A write waiting behind a stuck one gives up with its own context.
func TestWriteWaitsWithItsContext(t *testing.T) {
	p := startSpec(t, "deaf", Spec{WriteTimeout: time.Hour})
	big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	go p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"big"`), Method: "tools/call", Params: big}, nil)
	// Queue behind the big write once it holds the worker's stdin.
	waitUntil(t, "the big write started", p.turnHeld)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Write(ctx, jsonrpc.Notification("notifications/initialized", nil)) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a notification was written to a worker whose stdin is full")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a queued write ignored its context")
	}
}

// Invalid UTF-8 from a worker never reaches a client: it is replaced with U+FFFD.
func TestInvalidUTF8FromWorkerIsReplaced(t *testing.T) {
	rec := &recorder{}
	p := startSpec(t, "echo", Spec{OnMessage: rec.add})
	m := call(t, p, `"u"`, "badutf8", "")
	if !utf8.Valid(m.Encode()) {
		t.Errorf("answer is not valid UTF-8: %q", m.Encode())
	}
	var res struct{ Text string }
	if err := json.Unmarshal(m.Result, &res); err != nil || res.Text != "caf\uFFFD \uFFFD ok" {
		t.Errorf("result = %q (%v)", m.Result, err)
	}
	msgs := rec.all()
	if len(msgs) != 1 || !utf8.Valid(msgs[0].Encode()) {
		t.Errorf("notification not sanitized: %v", msgs)
	}
}
