package sessionless

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Each Mcp-Param-* rule: a bound argument and its header are both absent or equal (strings as
// they are or in the base64 form, integers and booleans by value); raw non-ASCII is refused.
func TestCheckParamHeaders(t *testing.T) {
	bindings := schemaBindings(json.RawMessage(`{"properties":{"region":{"type":"string","x-mcp-header":"Region"},
		"opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}}`), nil, nil)
	if len(bindings) != 2 {
		t.Fatalf("bindings %v", bindings)
	}
	tests := []struct {
		name   string
		args   string
		header map[string]string
		ok     bool
	}{
		{"both match", `{"region":"eu","opts":{"n":3}}`, map[string]string{"Region": "eu", "N": "3"}, true},
		{"both absent", `{}`, nil, true},
		{"string differs", `{"region":"eu"}`, map[string]string{"Region": "us"}, false},
		{"header missing", `{"region":"eu"}`, nil, false},
		{"header without argument", `{}`, map[string]string{"Region": "eu"}, false},
		{"base64 form", `{"region":"é"}`, map[string]string{"Region": "=?base64?w6k=?="}, true},
		{"raw non-ASCII", `{"region":"é"}`, map[string]string{"Region": "é"}, false},
		{"integer differs", `{"opts":{"n":3}}`, map[string]string{"N": "4"}, false},
		{"object argument", `{"region":{"a":1}}`, map[string]string{"Region": "x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"t","arguments":` + tc.args + `}`)}
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(ParamHeaderPrefix+k, v)
			}
			he := checkParamHeaders(h, msg, bindings)
			if (he == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", he, tc.ok)
			}
			if he != nil && (he.Status != http.StatusBadRequest || he.Code != CodeHeaderMismatch) {
				t.Errorf("refusal %d %d, want 400 -32020", he.Status, he.Code)
			}
		})
	}
}
