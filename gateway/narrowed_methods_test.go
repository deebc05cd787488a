package gateway

import (
	"net/http"
	"testing"
)

// A read-only token on a read-write session may call read-only tools and read, nothing else
// (narrowed.go): it may not send the worker notifications but the cancellation of its own
// read-only call. A request does what a notification does: tasks/cancel (MCP 2025-11-25)
// cancels a read-write call's task as notifications/cancelled cancels the call, and a method
// MCP does not name is the worker's to interpret, a write as likely as not. Both are refused
// 403 with the challenge for the write scope, before the read-write worker sees them; what
// reads (ping, the lists, tasks/get) still reaches it.
func TestReadOnlyTokenSendsOnlyReadingRequestsToReadWriteWorker(t *testing.T) {
	f := newFixture(t)
	rw := f.client("alice-rw")
	rw.open()
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"tasks/cancel", map[string]any{"taskId": "task-of-a-write"}},
		{"notes/commit", map[string]any{}},
	} {
		r := ro.rpc("7", c.method, c.params)
		if r.status != http.StatusForbidden {
			t.Errorf("%s with the read-only token on the read-write session: %d %s; want 403 naming the write scope", c.method, r.status, r.body)
			continue
		}
		if e := rpcError(t, r.only(t)); e.Code != codeForbidden {
			t.Errorf("%s: error %+v, want %d", c.method, e, codeForbidden)
		}
	}
	for _, method := range []string{"ping", "tools/list", "tasks/get"} {
		params := map[string]any{}
		if method == "tasks/get" {
			params["taskId"] = "t"
		}
		if r := ro.rpc("8", method, params); r.status != http.StatusOK {
			t.Errorf("%s with the read-only token on the read-write session: %d %s; want it passed", method, r.status, r.body)
		}
	}
	// The read-write token's own requests pass as they did.
	if r := rw.rpc("9", "tasks/cancel", map[string]any{"taskId": "t"}); r.status != http.StatusOK {
		t.Errorf("tasks/cancel with the read-write token: %d %s; want it passed to the worker", r.status, r.body)
	}
}
