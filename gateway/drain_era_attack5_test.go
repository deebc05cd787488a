package gateway

import (
	"net/http"
	"reflect"
	"testing"
)

// While a replica drains, new work is refused alike in both eras (DESIGN §9.11): an
// initialize (a new legacy session) and a 2026-07-28 request of a user without a worker here
// are the same refusal, nothing started and another replica to try, with the same status,
// Retry-After, code, text and data.
func TestDrainRefusalIsTheSameInBothEras(t *testing.T) {
	f := newSessionlessFixture(t)
	f.gw.BeginDrain()
	l := f.client("bob-rw").rpc(`"i1"`, "initialize", initParams("2025-11-25"))
	m := f.client("bob-rw").sessionless(`"s1"`, "tools/list", nil)
	if l.status != http.StatusServiceUnavailable || m.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d for initialize, %d sessionless; want 503 for both\n%s\n%s", l.status, m.status, l.body, m.body)
	}
	if la, ma := l.header.Get("Retry-After"), m.header.Get("Retry-After"); la != ma || la == "" {
		t.Errorf("Retry-After %q for initialize, %q sessionless; want the same", la, ma)
	}
	le, me := rpcError(t, l.only(t)), rpcError(t, m.only(t))
	if le.Message != me.Message || le.Code != me.Code || !reflect.DeepEqual(le.Data, me.Data) {
		t.Errorf("initialize refused %d %q %v, a sessionless request %d %q %v; want the same",
			le.Code, le.Message, le.Data, me.Code, me.Message, me.Data)
	}
}
