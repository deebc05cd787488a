package pool

import (
	"encoding/json"
	"testing"
	"time"
)

// A session of a shared worker is answered with its own protocol version when the worker
// speaks it, as a worker at gemgate's latest version does for every older one: a worker that
// agreed 2025-06-18 with gemgate speaks 2025-03-26 as well, and a client that asked for
// 2025-03-26, which gemgate serves, must get it (MCP: a server that supports the requested
// version answers with it), not 2025-06-18, which a 2025-03-26 client may not speak. A
// version later than the worker's is answered with the worker's.
func TestSharedWorkerAnswersTheSessionsOwnOlderVersion(t *testing.T) {
	p := newTestPool(t, Settings{}) // the script worker agrees 2025-06-18
	for _, tt := range []struct{ asked, want string }{
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-06-18"},
	} {
		id := Identity{Issuer: "https://issuer.test", Subject: "sub-alice", User: "alice", Session: "v" + tt.asked}
		params := json.RawMessage(`{"protocolVersion":"` + tt.asked + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
		m, result, err := p.Attach(t.Context(), Attach{Identity: id, Caller: newCaller(time.Time{}), Params: params})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := protocolVersion(result); got != tt.want {
			t.Errorf("a session asking %s was answered %s, want %s", tt.asked, got, tt.want)
		}
		m.Detach()
	}
}
