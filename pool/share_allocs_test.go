package pool

import (
	"encoding/json"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A call that gemgate does not answer itself (nearly all of them) costs shareLocked nothing:
// the answer it gives to a shared subscription or level is made only when it is given.
func TestShareLockedAllocatesNothingForAPlainCall(t *testing.T) {
	s := &slot{}
	c := &Call{w: &wrk{}, clientID: json.RawMessage(`1`), msg: &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call"}}
	if n := testing.AllocsPerRun(100, func() {
		if s.shareLocked(c) != nil {
			t.Fatal("a tools/call was answered by the pool")
		}
	}); n != 0 {
		t.Errorf("shareLocked allocated %v times for a tools/call, want 0", n)
	}
}
