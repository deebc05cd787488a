package pool

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// roundTripAllocs is what one call through the pool to a running worker and its answer back
// allocate, in gemgate's process, once warm: the pool's call record and its channel, the
// worker's call record, the line to the worker, the answer's parse. A new allocation on this
// path is a cost on every call of every session; lower the figure when you remove one. The
// race detector's instrumentation adds its own (raceAllocs).
const roundTripAllocs = 20

func TestCallRoundTripAllocations(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	id := Identity{Issuer: "https://issuer.test", Subject: "sub-alice", User: "alice", Session: "s1"}
	params := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	m, _, err := p.Attach(t.Context(), Attach{Identity: id, Caller: newCaller(time.Now()), Params: params})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Message: &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"nothing","arguments":{}}`)}}
	timeout := time.NewTimer(time.Hour) // made here, so that waiting allocates nothing
	defer timeout.Stop()
	roundTrip := func() {
		c, err := m.Call(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		timeout.Reset(waitFor)
		select {
		case a := <-c.Result():
			if a.Result == nil {
				t.Fatalf("answer %s", a.Encode())
			}
		case <-timeout.C:
			t.Fatal("no answer")
		}
	}
	roundTrip() // the worker is started and warm
	n := testing.AllocsPerRun(200, roundTrip)
	t.Logf("%.1f allocations per round trip", n)
	if n > roundTripAllocs+raceAllocs {
		t.Errorf("a call's round trip allocates %.1f times, want at most %d", n, roundTripAllocs+raceAllocs)
	}
}
