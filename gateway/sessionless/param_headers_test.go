package sessionless

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Each Mcp-Param-* rule: a bound argument and its header are both absent or equal (strings as
// they are or in the base64 form, integers and booleans by value); raw non-ASCII is refused.
func TestCheckParamHeaders(t *testing.T) {
	bindings := schemaBindings(json.RawMessage(`{"properties":{"region":{"type":"string","x-mcp-header":"Region"},
		"opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
		"dry":{"type":"boolean","x-mcp-header":"Dry"}}}`), nil, nil)
	if len(bindings) != 3 {
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
		{"boolean matches", `{"dry":true}`, map[string]string{"Dry": "true"}, true},
		{"boolean differs", `{"dry":false}`, map[string]string{"Dry": "true"}, false},
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

// TestBindingsFromToolsList: the x-mcp-header bindings are read from a worker's tools/list
// page, per tool, nested properties included; a tool without any binds nothing, and a page
// that is no tools list adds nothing.
func TestBindingsFromToolsList(t *testing.T) {
	into := map[string][]paramBinding{}
	bindingsFrom(json.RawMessage(`{"tools":[
		{"name":"deploy","inputSchema":{"properties":{"region":{"type":"string","x-mcp-header":"Region"},
			"opts":{"properties":{"zone":{"x-mcp-header":"Zone"}}},"note":{"type":"string"}}}},
		{"name":"echo","inputSchema":{"properties":{"text":{"type":"string"}}}}],"nextCursor":"c2"}`), into)
	got := map[string]string{}
	for _, b := range into["deploy"] {
		got[strings.Join(b.path, ".")] = b.header
	}
	if len(got) != 2 || got["region"] != "Region" || got["opts.zone"] != "Zone" {
		t.Errorf("deploy's bindings %v, want region→Region and opts.zone→Zone", got)
	}
	if len(into["echo"]) != 0 {
		t.Errorf("echo binds %v, want nothing", into["echo"])
	}
	before := len(into)
	bindingsFrom(json.RawMessage(`[1]`), into)
	if len(into) != before {
		t.Errorf("a page that is no tools list added bindings: %v", into)
	}
}

// TestBindingsDepth: x-mcp-header bindings are read nine properties deep, the binding's own
// included, and no deeper: a worker's schema cannot make gemgate recurse without bound.
func TestBindingsDepth(t *testing.T) {
	nested := func(depth int) json.RawMessage {
		s := `{"type":"string","x-mcp-header":"Deep"}`
		for range depth - 1 {
			s = `{"properties":{"p":` + s + `}}`
		}
		return json.RawMessage(`{"properties":{"p":` + s + `}}`)
	}
	if b := schemaBindings(nested(9), nil, nil); len(b) != 1 || len(b[0].path) != 9 {
		t.Errorf("a binding 9 deep: %v, want it read", b)
	}
	if b := schemaBindings(nested(10), nil, nil); len(b) != 0 {
		t.Errorf("a binding 10 deep: %v, want none read", b)
	}
}
