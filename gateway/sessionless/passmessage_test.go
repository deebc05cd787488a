package sessionless

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// passMessage keeps every byte of what it does not touch (no decoding and encoding again:
// key order, escapes and "<>&" stay), swaps gemgate's requestState for the worker's own on a
// retry, and drops it when the worker had none.
func TestPassMessageSplices(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"z":"<a&b>","a":"\u00e9"},` +
		`"requestState":"gg1.x","inputResponses":{"k":{"action":"accept"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	msg, err := jsonrpc.Parse([]byte(body), jsonrpc.Options{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		retry       bool
		workerState string
		wantState   string // "" when params must carry none
	}{
		{"a retry with the worker's state", true, `w"1`, `"requestState":"w\"1"`},
		{"a retry without one", true, "", ""},
		{"not a retry", false, "", `"requestState":"gg1.x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := passMessage(msg, tt.retry, tt.workerState)
			if err != nil {
				t.Fatal(err)
			}
			p := string(out.Params)
			if !json.Valid(out.Params) {
				t.Fatalf("params %s are not JSON", p)
			}
			if !strings.Contains(p, `"arguments":{"z":"<a&b>","a":"\u00e9"}`) || !strings.Contains(p, `"inputResponses":{"k":{"action":"accept"}}`) {
				t.Errorf("untouched members changed: %s", p)
			}
			if n := strings.Count(p, `"requestState"`); (tt.wantState == "" && n != 0) || (tt.wantState != "" && (n != 1 || !strings.Contains(p, tt.wantState))) {
				t.Errorf("params %s: want requestState %q", p, tt.wantState)
			}
		})
	}
}
