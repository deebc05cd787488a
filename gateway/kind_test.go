package gateway

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// A message whose method says it is of the other kind is refused, not passed on: a request
// (with an id) named notifications/cancelled, which a go-sdk worker's transport acts on
// whatever the id, and which would then cancel the worker's call of that number, another
// session's on a shared worker; and a notification named as a request, which would reach
// the worker past the policy, which decides on requests.
func TestMessagesOfTheOtherKindAreRefused(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
	victim, attacker := f.client("alice-rw"), f.client("alice-rw")
	victim.open()
	attacker.open()
	done := make(chan reply, 1)
	go func() { done <- victim.callTool(`"victim"`, "slow", map[string]any{"seconds": 1}) }()
	for n := 1; n <= 20; n++ { // the worker numbers its calls 1, 2, …: the victim's is among them
		r := attacker.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"x%d","method":"notifications/cancelled","params":{"requestId":%d}}`, n, n))
		if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte(`"code":-32600`)) {
			t.Fatalf("a request named notifications/cancelled: status %d, body %s; want 400 -32600", r.status, r.body)
		}
	}
	r := <-done
	if m := r.only(t); m.Error != nil || strings.Contains(string(m.Result), "cancelled") {
		t.Fatalf("the victim's call: %s %s", m.Error, m.Result)
	}
	for _, method := range []string{"tools/call", "ping"} {
		r := attacker.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":{"name":"whoami","arguments":{}}}`, method))
		if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte(`"code":-32600`)) {
			t.Fatalf("a notification named %s: status %d, body %s; want 400 -32600", method, r.status, r.body)
		}
	}
	// The kinds as they should be are served.
	if r := attacker.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nothing"}}`); r.status != http.StatusAccepted {
		t.Fatalf("a notifications/cancelled notification: status %d, body %s", r.status, r.body)
	}
}

// A message in a session whose _meta names the 2026-07-28 protocol version is refused: the
// worker (the go-sdk's server decides per request) would take it as a sessionless request,
// with none of gemgate's checks of that era, while gemgate reads it as the session's.
func TestSessionMessageOfTheOtherEraIsRefused(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	for _, meta := range []string{
		`{"` + sessionless.MetaProtocolVersion + `":"` + sessionless.Version + `"}`,
		`{"progressToken":1,"` + sessionless.MetaProtocolVersion + `":"2025-06-18"}`,
	} {
		r := c.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":` + meta + `}}`)
		if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte(`"code":-32600`)) {
			t.Fatalf("_meta %s in a session: status %d, body %s; want 400 -32600", meta, r.status, r.body)
		}
	}
	if r := c.post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"progressToken":1}}}`); r.status != http.StatusOK {
		t.Fatalf("a session's own _meta: status %d, body %s", r.status, r.body)
	}
}

// The other era's _meta is refused where a worker would read it (an initialize, a session's
// message), but a sessionless server/discover still gets the answer that makes a dual-era
// client fall back to initialize.
func TestEraMetaOutsideASession(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	meta := `{"` + sessionless.MetaProtocolVersion + `":"2025-06-18"}`
	r := c.post(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + meta + `}}`)
	if m := r.only(t); r.status != http.StatusOK || m.Error == nil || !bytes.Contains(m.Error, []byte("use initialize")) {
		t.Fatalf("server/discover without a session: status %d, body %s; want the fall-back answer", r.status, r.body)
	}
	r = c.post(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"},"_meta":` + meta + `}}`)
	if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte(`"code":-32600`)) {
		t.Fatalf("initialize with the other era's _meta: status %d, body %s; want 400 -32600", r.status, r.body)
	}
}
