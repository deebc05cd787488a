package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

const (
	ourParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ourState  = "gemgate=1"
)

func TestWithTraceMetaReplacesTheClients(t *testing.T) {
	cases := []struct{ name, params, want string }{
		{"no params", ``, `{"_meta":{"traceparent":"` + ourParent + `","tracestate":"gemgate=1"}}`},
		{"null params", `null`, `{"_meta":{"traceparent":"` + ourParent + `","tracestate":"gemgate=1"}}`},
		{"no _meta", `{"name":"echo","arguments":{"a":1}}`,
			`{"name":"echo","arguments":{"a":1},"_meta":{"traceparent":"` + ourParent + `","tracestate":"gemgate=1"}}`},
		{"null _meta", `{"_meta":null,"name":"x"}`, `{"_meta":{"traceparent":"` + ourParent + `","tracestate":"gemgate=1"},"name":"x"}`},
		{"client's replaced, baggage and case variants dropped, rest kept",
			`{"name":"echo","_meta":{"progressToken":7,"traceparent":"00-11111111111111111111111111111111-2222222222222222-01","TraceState":"x=y","baggage":"user=alice","k":{"z":1}}}`,
			`{"name":"echo","_meta":{"progressToken":7,"k":{"z":1},"traceparent":"` + ourParent + `","tracestate":"gemgate=1"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call"`
			if c.params != "" {
				body += `,"params":` + c.params
			}
			msg, err := jsonrpc.Parse([]byte(body+`}`), jsonrpc.Options{Client: true})
			if err != nil {
				t.Fatal(err)
			}
			out, err := WithTraceMeta(msg, map[string]string{"traceparent": ourParent, "tracestate": ourState})
			if err != nil {
				t.Fatal(err)
			}
			if string(out.Params) != c.want {
				t.Errorf("params\n got %s\nwant %s", out.Params, c.want)
			}
			if string(out.ID) != "1" || out.Method != "tools/call" {
				t.Errorf("envelope changed: %s", out.Encode())
			}
		})
	}
}

func TestWithTraceMetaWithoutCarrierKeepsTheMessage(t *testing.T) {
	msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"traceparent":"x"}}}`), jsonrpc.Options{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := WithTraceMeta(msg, nil)
	if err != nil || out != msg {
		t.Fatalf("got %v, %v; want the message itself", out, err)
	}
}

// FuzzWithTraceMeta: whatever a client's params, the worker's message is one JSON object whose
// _meta has gemgate's traceparent once and no other trace member in any case, and keeps every
// other params member.
func FuzzWithTraceMeta(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"_meta":{}}`, `{"_meta":{"traceparent":"a","Baggage":"b"}}`, `{"a":[1,{"_meta":2}],"_meta":{"x":"\u00e9"}}`,
		`[1,2]`, `{"_meta":null}`, `{"_meta":"str"}`, `{"_meta":{"TRACEPARENT":1,"tracestate":{"a":1}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":`+params+`}`), jsonrpc.Options{Client: true})
		if err != nil {
			return
		}
		out, err := WithTraceMeta(msg, map[string]string{"traceparent": ourParent, "tracestate": ourState, "baggage": "k=v"})
		if err != nil {
			return // refused, as the strict reading refuses it
		}
		if out == msg {
			if bytes.HasPrefix(bytes.TrimLeft(msg.Params, " \t\r\n"), []byte("{")) {
				t.Fatalf("params object left without gemgate's context: %s", msg.Params)
			}
			return // params that are no object: nothing to carry it
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal(out.Params, &p); err != nil {
			t.Fatalf("params not an object: %v: %s", err, out.Params)
		}
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(p["_meta"], &meta); err != nil {
			t.Fatalf("_meta not an object: %v: %s", err, out.Params)
		}
		for k, v := range meta {
			for _, tk := range traceKeys {
				if strings.EqualFold(k, tk) && k != tk {
					t.Fatalf("a case variant of %s is left: %s", tk, out.Params)
				}
			}
			if k == "traceparent" && string(v) != `"`+ourParent+`"` {
				t.Fatalf("traceparent %s", v)
			}
		}
		// Once: present in _meta, and no repeat of it (the strict read below refuses repeated
		// keys); another member's value may hold a "traceparent" of its own.
		if _, ok := meta["traceparent"]; !ok {
			t.Fatalf("_meta has no traceparent: %s", out.Params)
		}
		in, _ := msg.ParamsObject()
		o, err := jsonrpc.ReadObject(out.Params, "params")
		if err != nil {
			t.Fatalf("the worker's params are not strict: %v", err)
		}
		if members(in) > 0 && members(o) < members(in) {
			t.Fatalf("a params member was lost: %s -> %s", msg.Params, out.Params)
		}
	})
}

// members is the number of o's members.
func members(o jsonrpc.Object) (n int) {
	o.Edit(func(_ string, v json.RawMessage) json.RawMessage {
		n++
		return v
	})
	return n
}

// An empty carrier (tracing on, no context to give) removes the client's trace keys in any
// case, keeps every other member, and adds no _meta to a message without one.
func TestWithTraceMetaEmptyCarrierRemovesTheClients(t *testing.T) {
	msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"Baggage":"k=v","traceparent":"x","progressToken":1}}}`), jsonrpc.Options{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := WithTraceMeta(msg, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out.Params), `{"name":"x","_meta":{"progressToken":1}}`; got != want {
		t.Errorf("params %s, want %s", got, want)
	}
	bare, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), jsonrpc.Options{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := WithTraceMeta(bare, map[string]string{}); err != nil || out != bare {
		t.Errorf("a message without params: got %v, %v; want the message itself", out, err)
	}
}

// FuzzWithTraceMetaEmptyCarrier: with tracing on and no context to give (an empty carrier),
// whatever a client's params, the worker's message has no trace member in _meta in any case,
// reads strictly, and keeps every other params member; a message left as it was had none.
func FuzzWithTraceMetaEmptyCarrier(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"_meta":{}}`, `{"_meta":{"traceparent":"a","Baggage":"b","x":1}}`, `[1,2]`, `{"_meta":null}`,
		`{"_meta":{"BAGGAGE":1}}`, `{"a":{"_meta":{"baggage":1}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":`+params+`}`), jsonrpc.Options{Client: true})
		if err != nil {
			return
		}
		out, err := WithTraceMeta(msg, map[string]string{})
		if err != nil {
			return // refused, as the strict reading refuses it
		}
		o, err := out.ParamsObject()
		if err != nil {
			return // params that are no object: nothing to carry it
		}
		meta, has, err := o.Object("_meta")
		if err != nil {
			t.Fatalf("_meta unreadable: %v: %s", err, out.Params)
		}
		if has {
			for _, tk := range traceKeys {
				for k := range metaKeys(t, meta) {
					if strings.EqualFold(k, tk) {
						t.Fatalf("%s is left in _meta: %s -> %s", k, msg.Params, out.Params)
					}
				}
			}
		}
		if _, err := jsonrpc.ReadObject(out.Params, "params"); err != nil {
			t.Fatalf("the worker's params are not strict: %v", err)
		}
		in, _ := msg.ParamsObject()
		if members(o) < members(in) {
			t.Fatalf("a params member was lost: %s -> %s", msg.Params, out.Params)
		}
	})
}

// metaKeys are the keys of a _meta object.
func metaKeys(t *testing.T, meta jsonrpc.Object) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	meta.Edit(func(k string, v json.RawMessage) json.RawMessage {
		keys[k] = true
		return v
	})
	return keys
}
