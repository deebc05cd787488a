//go:build linux

package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A worker that closes its stdout and stays alive can never answer again. The calls it holds,
// and those sent to it later, must end with an error once the grace is over, not wait for
// the worker's exit, which never comes: request_timeout is off by default, so nothing else
// ends them, and the worker would keep taking calls for ever.
func TestWorkerThatClosesStdoutIsStopped(t *testing.T) {
	p, _ := startScript(t, `read -r line; exec >&-; exec sleep 300`, Spec{})
	req := &jsonrpc.Message{ID: json.RawMessage(`"c1"`), Method: "tools/call", Params: json.RawMessage(`{}`)}
	c, err := p.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-c.Result():
		if m.Error == nil || string(m.ID) != `"c1"` {
			t.Fatalf("answer %s; want an error with the caller's id", m.Encode())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call to a worker that closed its stdout was never answered (the worker still runs)")
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the worker that closed its stdout was not stopped")
	}
	if _, err := p.Send(context.Background(), req, nil); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("a call after the worker's stdout closed: %v; want ErrExited", err)
	}
}

// A worker that closes its stdin and stays alive can never be sent a request again. A write
// that finds the pipe closed must stop it, not leave it running: every later call would wait
// for the worker's end, which never comes, and fail as if it had exited, while the worker
// keeps its slot (and its user's sessions) for ever.
func TestWorkerThatClosesStdinIsStopped(t *testing.T) {
	p, rec := startScript(t, `exec <&-; echo '{"jsonrpc":"2.0","method":"closed"}'; exec sleep 300`, Spec{})
	firstMessage(t, rec, "closed")
	req := &jsonrpc.Message{ID: json.RawMessage(`"c1"`), Method: "tools/call", Params: json.RawMessage(`{}`)}
	if _, err := p.Send(context.Background(), req, nil); err == nil {
		t.Fatal("a call was written to a worker that closed its stdin")
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the worker that closed its stdin was not stopped")
	}
}
