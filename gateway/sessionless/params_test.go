package sessionless

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A sessionless request's params are read once (check) and every later check and
// edit takes that reading. These hold the readers on the one reading to the readers that read
// the message afresh (requestStateOf, passMessage, and legacyMessage's own
// reading): the same fields, the same refusals with the same texts, the same bytes forwarded.

const sessionlessMetaOK = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`

// sessionlessParamsCases are params of a sessionless tools/call, well formed and hostile.
var sessionlessParamsCases = []string{
	`{"name":"echo","arguments":{"text":"x"},` + sessionlessMetaOK + `}}`,
	`{"name":"echo",` + sessionlessMetaOK + `,"progressToken":"p1"}}`,
	`{"name":"echo",` + sessionlessMetaOK + `,"progressToken":7,"other":{"a":1}}}`,
	`{"name":"echo",` + sessionlessMetaOK + `,"Progresstoken":7}}`,
	`{"name":"echo",` + sessionlessMetaOK + `,"progressToken":7,"progresstoken":8}}`,
	`{"name":"echo","Arguments":{},` + sessionlessMetaOK + `}}`,
	`{"name":"echo","arguments":[1],` + sessionlessMetaOK + `}}`,
	`{"name":"echo","arguments":null,` + sessionlessMetaOK + `}}`,
	`{"name":7,` + sessionlessMetaOK + `}}`,
	`{"name":"",` + sessionlessMetaOK + `}}`,
	`{"name":"echo","requestState":"gg1.x","inputResponses":{"k":{}},` + sessionlessMetaOK + `}}`,
	`{"name":"echo","requestState":7,` + sessionlessMetaOK + `}}`,
	`{"name":"echo","RequestState":"gg1.x",` + sessionlessMetaOK + `}}`,
	`{"name":"echo","inputresponses":{},` + sessionlessMetaOK + `}}`,
	`{"name":"echo","TASK":{},` + sessionlessMetaOK + `}}`,
	`{"name":"echo","task":{"ttl":1},` + sessionlessMetaOK + `}}`,
	`{"name":"echo",` + sessionlessMetaOK + `,"user":"kept","io.modelcontextprotocol/logLevel":"debug"}}`,
	`{"name":"echo",` + sessionlessMetaOK + `},"_META":{}}`,
	`{"name":"echo",` + sessionlessMetaOK + `},"name":"other"}`,
	`{"name":"echo",` + strings.Replace(sessionlessMetaOK, `"clientCapabilities":{}`, `"clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{},"x":{}},"tasks":{},"roots":{}}`, 1) + `}}`,
	`{"name":"echo",` + strings.Replace(sessionlessMetaOK, `"clientCapabilities":{}`, `"clientCapabilities":{"extensions":7}`, 1) + `}}`,
}

// TestSessionlessReadersAgreeWithFreshReads: for each case that passes check, the
// fields, the requestState and the forwarded message (both kinds of worker) are what the
// readers of a fresh reading give, refusals included.
func TestSessionlessReadersAgreeWithFreshReads(t *testing.T) {
	for i, params := range sessionlessParamsCases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
			msg, err := jsonrpc.Parse([]byte(body), jsonrpc.Options{Client: true})
			if err != nil {
				t.Fatalf("not a message: %v", err)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set(HeaderProtocolVersion, Version)
			r.Header.Set(HeaderMethod, "tools/call")
			r.Header.Set(HeaderName, "echo")
			mr, he := check(r, msg, testServed)
			if he != nil {
				t.Logf("refused by check: %v", he)
				return
			}
			s1, ok1, err1 := requestStateIn(mr.Params)
			s2, ok2, err2 := requestStateOf(msg)
			if s1 != s2 || ok1 != ok2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Fatalf("requestState %q %v %v, a fresh read %q %v %v", s1, ok1, err1, s2, ok2, err2)
			}
			l1 := legacyMessageOf(msg, mr.Params)
			l2, err := freshLegacyMessage(msg)
			if err != nil || string(l1.Params) != string(l2.Params) {
				t.Fatalf("to a legacy worker %s, from a fresh read %s (%v)", l1.Params, l2.Params, err)
			}
			for _, retry := range []bool{false, true} {
				p1, err1 := passMessageOf(msg, mr.Params, retry, "ws")
				p2, err2 := passMessage(msg, retry, "ws")
				if fmt.Sprint(err1) != fmt.Sprint(err2) || (err1 == nil && string(p1.Params) != string(p2.Params)) {
					t.Fatalf("to a sessionless worker (retry %v) %v %v, from a fresh read %v %v", retry, p1, err1, p2, err2)
				}
			}
		})
	}
}

// freshLegacyMessage is legacyMessage as it was: every object read again by EditObject.
func freshLegacyMessage(msg *jsonrpc.Message) (*jsonrpc.Message, error) {
	var metaErr error
	params, err := jsonrpc.EditObject(msg.Params, "params", func(key string, v json.RawMessage) json.RawMessage {
		switch key {
		case "inputResponses", "requestState", "task":
			return nil
		case "_meta":
			if string(v) == "null" {
				return nil
			}
			meta, err := jsonrpc.EditObject(v, "params._meta", func(k string, v json.RawMessage) json.RawMessage {
				if strings.HasPrefix(k, MetaPrefix) {
					return nil
				}
				return v
			})
			if err != nil {
				metaErr = err
			}
			if string(meta) == "{}" {
				return nil
			}
			return meta
		}
		return v
	})
	if err == nil {
		err = metaErr
	}
	if err != nil {
		return nil, err
	}
	out := *msg
	out.Params = params
	return &out, nil
}

// TestSessionlessForwardReadsParamsOnce: the checks and the edit of a sessionless tools/call
// read its params and _meta once. The bound is what one reading costs (the keys of params,
// _meta and the client capabilities and info, and their member lists) and the edited params; a
// second reading of params would exceed it.
func TestSessionlessForwardReadsParamsOnce(t *testing.T) {
	body := sessionlessCallBody(100)
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set(HeaderProtocolVersion, Version)
	r.Header.Set(HeaderMethod, "tools/call")
	r.Header.Set(HeaderName, "echo")
	msg, err := jsonrpc.Parse(body, jsonrpc.Options{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(20, func() {
		mr, he := check(r, msg, testServed)
		if he != nil {
			t.Fatal(he)
		}
		if _, _, err := requestStateIn(mr.Params); err != nil {
			t.Fatal(err)
		}
		_ = legacyMessageOf(msg, mr.Params)
	})
	// 34 with the core's field reader (readClientFields, on the same reading) measured too.
	if n > 12 {
		t.Errorf("the checks and edit of a sessionless call allocate %v times, want at most 12 (34 with the field reader; 94 when each check read the params again)", n)
	}
}

// testServed are the revisions the tests' gateway serves.
var testServed = []string{Version, "2025-11-25", "2025-06-18", "2025-03-26"}

// sessionlessCallBody is a tools/call of the era whose text argument is n bytes.
func sessionlessCallBody(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", n) + `"},"_meta":{"` + MetaProtocolVersion + `":"` + Version + `","` +
		MetaClientCapabilities + `":{},"` + MetaClientInfo + `":{"name":"bench","version":"1"}}}}`)
}

// TestRequestStateIn: a retry's requestState is read when it is a string, is absent when the
// member is; a case variant of requestState, inputResponses or task (which gemgate replaces or
// removes, and a worker could read for the real one) and a requestState that is no string are
// refused.
func TestRequestStateIn(t *testing.T) {
	tests := []struct {
		params  string
		want    string
		present bool
		refused bool
	}{
		{`{"name":"echo","requestState":"gg1.x","inputResponses":{"k":{}}}`, "gg1.x", true, false},
		{`{"name":"echo"}`, "", false, false},
		{`{"name":"echo","RequestState":"gg1.x"}`, "", false, true},
		{`{"name":"echo","requestState":"gg1.x","inputresponses":{}}`, "", false, true},
		{`{"name":"echo","Task":{}}`, "", false, true},
		{`{"name":"echo","requestState":7}`, "", false, true},
	}
	for _, tt := range tests {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+tt.params+`}`), jsonrpc.Options{Client: true})
		if err != nil {
			t.Fatalf("%s: not a message: %v", tt.params, err)
		}
		params, err := msg.ParamsObject()
		if err != nil {
			t.Fatal(err)
		}
		s, ok, err := requestStateIn(requestParams{Object: params, Present: true})
		if s != tt.want || ok != tt.present || (err != nil) != tt.refused {
			t.Errorf("%s: requestState %q, present %v, error %v; want %q, %v, refused %v", tt.params, s, ok, err, tt.want, tt.present, tt.refused)
		}
	}
	if s, ok, err := requestStateIn(requestParams{}); s != "" || ok || err != nil {
		t.Errorf("no params: %q %v %v, want none", s, ok, err)
	}
}
