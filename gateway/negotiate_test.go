package gateway

import (
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// negotiate reads the client's protocol version strictly and passes the params on as written
// but for that member: a version the gateway speaks as is, any other replaced by the latest.
func TestNegotiateKeepsTheClientsBytes(t *testing.T) {
	latest := `"` + supportedVersions[0] + `"`
	for _, tt := range []struct{ params, want string }{
		{`{"protocolVersion":"2025-06-18","capabilities":{ "roots" : {} }}`, `{"protocolVersion":"2025-06-18","capabilities":{ "roots" : {} }}`},
		{`{"capabilities":{ "x" : 1 },"protocolVersion":"1999-01-01","clientInfo":{"name":"c"}}`, `{"capabilities":{ "x" : 1 },"protocolVersion":` + latest + `,"clientInfo":{"name":"c"}}`},
		{`{"protocolVersion":20250618}`, `{"protocolVersion":` + latest + `}`},
		{`{"capabilities":{}}`, `{"capabilities":{},"protocolVersion":` + latest + `}`},
		{`{}`, `{"protocolVersion":` + latest + `}`},
	} {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+tt.params+`}`), jsonrpc.Options{Client: true})
		if err != nil {
			t.Fatal(err)
		}
		got, err := negotiate(msg)
		if err != nil || string(got) != tt.want {
			t.Errorf("negotiate(%s) = %s, %v; want %s", tt.params, got, err, tt.want)
		}
	}
	for _, params := range []string{`null`, `[]`, `"2025-06-18"`} {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+params+`}`), jsonrpc.Options{Client: true})
		if err != nil {
			continue // refused before negotiate could see it
		}
		if got, err := negotiate(msg); err == nil {
			t.Errorf("negotiate(%s) = %s; want an error", params, got)
		}
	}
	if _, err := negotiate(&jsonrpc.Message{Method: "initialize"}); err == nil {
		t.Error("negotiate without params: no error")
	}
}

// An initialize whose clientInfo is there and not an object is refused -32602 before any
// worker is had, as a 2026-07-28 request's _meta clientInfo is: a per-user session opened on
// it (gemgate's own clientInfo goes to that worker), while a per-session worker got it as
// written. A null clientInfo is none, in both eras.
func TestInitializeClientInfoNotAnObjectIsRefused(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
	for _, info := range []any{"x", 5, []any{}, true} {
		params := initParams("2025-11-25")
		params["clientInfo"] = info
		r := f.client("alice-rw").rpc("1", "initialize", params)
		m := r.only(t)
		if r.header.Get(headerSessionID) != "" || m.Error == nil || rpcError(t, m).Code != jsonrpc.CodeInvalidParams {
			t.Errorf("initialize with clientInfo %v: status %d, session %q, %s; want -32602 and no session",
				info, r.status, r.header.Get(headerSessionID), r.body)
		}
	}
	params := initParams("2025-11-25")
	params["clientInfo"] = nil
	if r := f.client("alice-rw").rpc("1", "initialize", params); r.header.Get(headerSessionID) == "" {
		t.Errorf("initialize with clientInfo null: %d %s; want a session", r.status, r.body)
	}
}
