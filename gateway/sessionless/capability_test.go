package sessionless

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// checkCaps runs check on a tools/call whose _meta carries caps (raw JSON) and, when logLevel
// is not "", the raw logLevel member.
func checkCaps(t *testing.T, caps, logLevel string) (*checks, bool) {
	t.Helper()
	meta := `"` + MetaProtocolVersion + `":"` + Version + `","` + MetaClientCapabilities + `":` + caps
	if logLevel != "" {
		meta += "," + logLevel
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{` + meta + `}}}`
	msg, err := jsonrpc.Parse([]byte(body), jsonrpc.Options{Client: true})
	if err != nil {
		return nil, false // refused by the strict parser already: as ambiguous
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set(HeaderProtocolVersion, Version)
	r.Header.Set(HeaderMethod, "tools/call")
	r.Header.Set(HeaderName, "t")
	mr, he := check(r, msg, testServed)
	return &mr, he == nil
}

// TestDeclaredCapabilities: the bridge takes a capability as declared when its member is an
// object, as a go-sdk server reads it; a duplicate or a case variant of a key is refused
// before anything decides on it.
func TestDeclaredCapabilities(t *testing.T) {
	for _, c := range []struct {
		caps string
		ok   bool
		want declared
	}{
		{`{}`, true, declared{}},
		{`{"sampling":{}}`, true, declared{sampling: true}},
		{`{"sampling":{"tools":{}},"elicitation":{"form":{}},"roots":{"listChanged":true}}`, true, declared{true, true, true}},
		{`{"sampling":null,"elicitation":true,"roots":[]}`, true, declared{}},
		{"{ \"sampling\" :\n {} , \"roots\": {\"listChanged\":false}}", true, declared{sampling: true, roots: true}},
		{`{"experimental":{"sampling":{}}}`, true, declared{}},
		{`{"sampling":{},"sampling":{}}`, false, declared{}},
		{`{"Sampling":{}}`, false, declared{}},
		{`{"elicitation":{},"ELICITATION":{}}`, false, declared{}},
	} {
		mr, ok := checkCaps(t, c.caps, "")
		if ok != c.ok {
			t.Errorf("%s: accepted %v, want %v", c.caps, ok, c.ok)
			continue
		}
		if ok {
			if got := declaredCaps(mr.Caps); got != c.want {
				t.Errorf("%s: declared %+v, want %+v", c.caps, got, c.want)
			}
		}
	}
}

// TestSortRefusesUndeclared: the worker's questions the request declared a capability for are
// kept; the others are refused to the worker and named in requiredCapabilities.
func TestSortRefusesUndeclared(t *testing.T) {
	q := func(id, method string) *jsonrpc.Message {
		return &jsonrpc.Message{ID: json.RawMessage(id), Method: method}
	}
	asked := map[string]*jsonrpc.Message{
		"a": q(`"a"`, "sampling/createMessage"), "b": q(`"b"`, "elicitation/create"),
		"c": q(`"c"`, "roots/list"), "d": q(`"d"`, "ping"),
	}
	for _, c := range []struct {
		d       declared
		kept    []string
		lacking []string
	}{
		{declared{}, []string{"d"}, []string{"elicitation", "roots", "sampling"}},
		{declared{sampling: true}, []string{"a", "d"}, []string{"elicitation", "roots"}},
		{declared{elicitation: true, roots: true}, []string{"b", "c", "d"}, []string{"sampling"}},
		{declared{true, true, true}, []string{"a", "b", "c", "d"}, nil},
	} {
		var refused []string
		kept, lacking := c.d.sort(asked, func(id json.RawMessage, why string) bool {
			refused = append(refused, string(id))
			return true
		})
		if got := sortedKeys(kept); !reflect.DeepEqual(got, c.kept) {
			t.Errorf("%+v: kept %v, want %v", c.d, got, c.kept)
		}
		if got := sortedKeys(lacking); !reflect.DeepEqual(got, c.lacking) {
			t.Errorf("%+v: lacking %v, want %v", c.d, got, c.lacking)
		}
		if len(refused) != len(asked)-len(c.kept) {
			t.Errorf("%+v: refused %v to the worker, want the %d not kept", c.d, refused, len(asked)-len(c.kept))
		}
		for _, v := range lacking {
			if b, _ := json.Marshal(v); string(b) != "{}" {
				t.Errorf("requiredCapabilities member %s, want {}", b)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestLogLevelDecidesLogs: a request's log lines reach it only when its _meta names a level
// (as a string); a case variant or duplicate of the key is refused.
func TestLogLevelDecidesLogs(t *testing.T) {
	logLine := func(level string) []byte {
		return jsonrpc.Notification("notifications/message", map[string]any{"level": level, "data": "x"}).Encode()
	}
	progress := jsonrpc.Notification("notifications/progress", map[string]any{"progressToken": 1, "progress": 1}).Encode()
	key := `"` + MetaLogLevel + `":`
	for _, c := range []struct {
		member string
		ok     bool
		logs   []string // the levels of the lines that pass, of info, warning and error
	}{
		{"", true, nil},
		{key + `"info"`, true, []string{"info", "warning", "error"}},
		{key + `"debug"`, true, []string{"info", "warning", "error"}},
		{key + `"warning"`, true, []string{"warning", "error"}},
		{key + `"emergency"`, true, nil},
		{key + `null`, true, nil},
		// A level gemgate cannot read is refused, as a session's logging/setLevel is.
		{key + `5`, false, nil},
		{key + `"verbose"`, false, nil},
		{key + `"INFO"`, false, nil},
		{key + `""`, false, nil},
		{key + `"info",` + key + `"info"`, false, nil},
		{`"io.modelcontextprotocol/LogLevel":"info"`, false, nil},
	} {
		mr, ok := checkCaps(t, `{}`, c.member)
		if ok != c.ok {
			t.Errorf("%s: accepted %v, want %v", c.member, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		cl := newCaller(mr.LogLevel)
		var passed []string
		for _, level := range []string{"info", "warning", "error"} {
			if cl.takes(logLine(level)) {
				passed = append(passed, level)
			}
		}
		if !slices.Equal(passed, c.logs) {
			t.Errorf("%s: log lines of levels %v passed, want %v", c.member, passed, c.logs)
		}
		if !cl.takes(progress) {
			t.Errorf("%s: progress dropped", c.member)
		}
	}
}

// TestResourceNotFound: a legacy worker's -32002 becomes 2026-07-28's -32602, message and data
// kept; another code, or an error whose code is ambiguous, stays as it came.
func TestResourceNotFound(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"code":-32002,"message":"Resource not found","data":{"uri":"test://x"}}`, `{"code":-32602,"message":"Resource not found","data":{"uri":"test://x"}}`},
		{`{"message":"m","code":-32002}`, `{"message":"m","code":-32602}`},
		{`{"code":-32603,"message":"m"}`, `{"code":-32603,"message":"m"}`},
		{`{"code":-32602,"message":"m"}`, `{"code":-32602,"message":"m"}`},
		{`{"code":-32002,"code":-32002,"message":"m"}`, `{"code":-32002,"code":-32002,"message":"m"}`},
		{`{"code":-32002,"Code":-32002,"message":"m"}`, `{"code":-32002,"Code":-32002,"message":"m"}`},
		{`{"code":"-32002","message":"m"}`, `{"code":"-32002","message":"m"}`},
	} {
		resp := &jsonrpc.Message{ID: json.RawMessage(`1`), Error: json.RawMessage(c.in)}
		if got := resourceNotFound(resp); string(got.Error) != c.want {
			t.Errorf("%s: %s, want %s", c.in, got.Error, c.want)
		}
	}
}
