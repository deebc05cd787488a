package jsonrpc

import (
	"encoding/json"
	"testing"
)

// TestErrorCodes pins the codes gemgate answers with to their definitions: JSON-RPC 2.0
// §5.1 for the first five, and the MCP SDKs' request timeout. A client switches on these numbers.
func TestErrorCodes(t *testing.T) {
	for name, tt := range map[string]struct{ got, want int }{
		"parse error":      {CodeParseError, -32700},
		"invalid request":  {CodeInvalidRequest, -32600},
		"method not found": {CodeMethodNotFound, -32601},
		"invalid params":   {CodeInvalidParams, -32602},
		"internal error":   {CodeInternalError, -32603},
		"request timeout":  {CodeRequestTimeout, -32001},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", name, tt.got, tt.want)
		}
	}
}

// TestNotification builds a notification: a method, marshalled params, no id.
func TestNotification(t *testing.T) {
	m := Notification("notifications/progress", map[string]any{"progressToken": "t", "progress": 1})
	if !m.IsNotification() || m.IsRequest() || m.ID != nil {
		t.Errorf("Notification is not a notification: %+v", m)
	}
	back, err := Parse(m.Encode(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var params struct {
		Token    string `json:"progressToken"`
		Progress int    `json:"progress"`
	}
	if err := json.Unmarshal(back.Params, &params); err != nil || params.Token != "t" || params.Progress != 1 {
		t.Errorf("params came back as %s (%v)", back.Params, err)
	}
}
