package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A session's SSE answers come one after another on one kept-alive connection, read through
// one reader (reset for each): what one answer's body holds after its answer, here an event
// left unterminated that claims to answer the next call, is never read as part of the next
// answer, whose body starts by ending an event.
func TestSSEAnswerLeavesNothingForTheNext(t *testing.T) {
	var n, conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		switch n.Add(1) {
		case 1:
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"first\"}]}}\n\n"+
				"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"WRONG\"}]}}\n")
		default:
			fmt.Fprint(w, "\n: the event before this ended\n\n"+
				"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"right\"}]}}\n\n")
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s := newHTTPSession(srv.URL, "")
	t.Cleanup(s.tr.CloseIdleConnections)
	for _, want := range []string{"first", "right"} {
		a, _, err := s.call(context.Background(), "tools/call", map[string]any{})
		if err != nil {
			t.Fatalf("call answered %q: %v", want, err)
		}
		if got := a.Result.Content[0].Text; got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
	}
	if c := conns.Load(); c != 1 {
		t.Fatalf("%d connections, want the two answers on one kept-alive connection", c)
	}
}
