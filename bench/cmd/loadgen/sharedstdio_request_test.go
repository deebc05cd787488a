package main

import (
	"context"
	"testing"
	"time"
)

// A worker may send the client requests of its own (ping, roots/list) whenever it likes, with
// ids of its own numbering that can equal a call's: such a request is not the call's answer.
// The worker here asks ping with the id of loadgen's first call, then answers that call.
func TestSharedWorkerTakesNoRequestForAnAnswer(t *testing.T) {
	w := &sharedWorker{argv: []string{"sh", "-c", `read line; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; read line; read line
echo '{"jsonrpc":"2.0","id":1,"method":"ping"}'
echo '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}'
read line; exit 0`}}
	s, err := w.session()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.end(context.Background()) })
	answeredRight(t, func() error { return s.echo(context.Background(), "hello") })
}

// The same holds for a session of its own worker (-stdio without -shared).
func TestStdioCallTakesNoRequestForAnAnswer(t *testing.T) {
	s, _, err := openStdio([]string{"sh", "-c", `read line; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; read line; read line
echo '{"jsonrpc":"2.0","id":2,"method":"ping"}'
echo '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hello"}]}}'
read line; exit 0`})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	answeredRight(t, func() error { return s.echo("hello") })
}

// answeredRight fails the test unless call returns without error within 10 s.
func answeredRight(t *testing.T, call func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the call took the worker's ping for its answer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call got no answer")
	}
}
