package sessionless

import (
	"encoding/json"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A sessionless request goes to a legacy worker and its answer comes back with members taken out
// or added, every other byte as it was: the message is spliced, never decoded and encoded
// whole (which would cost two passes over a megabyte, escape <, > and &, and sort the keys).
func TestSessionlessMessagesAreSpliced(t *testing.T) {
	t.Run("request", func(t *testing.T) {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a<b"},`+
			`"_meta":{"`+MetaProtocolVersion+`":"`+Version+`","progressToken":5},"requestState":"x","inputResponses":{}}}`), jsonrpc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := legacyMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"name":"echo","arguments":{"text":"a<b"},"_meta":{"progressToken":5}}`; string(out.Params) != want {
			t.Errorf("params to the worker\n got %s\nwant %s", out.Params, want)
		}
	})
	tests := []struct {
		method, result, want string
	}{
		{"tools/call", `{"content":[{"type":"text","text":"a<b"}],"isError":false}`,
			`{"content":[{"type":"text","text":"a<b"}],"isError":false,"resultType":"complete"}`},
		{"tools/call", `{"resultType":"complete","z":1}`, `{"resultType":"complete","z":1}`},
		{"tools/list", `{"tools":[],"cacheScope":"public"}`, `{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}`},
		{"tools/list", `{"ttlMs":5}`, `{"ttlMs":5,"resultType":"complete","cacheScope":"private"}`},
		{"ping", `{}`, `{"resultType":"complete"}`},
	}
	for _, tc := range tests {
		t.Run("answer "+tc.method+" "+tc.result, func(t *testing.T) {
			got, err := spliceResult(tc.method, json.RawMessage(tc.result))
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}
