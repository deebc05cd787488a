package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemgate/gemgate/jsonrpc"
)

// The differential test: whatever the bytes, the tool the gateway approves is the tool the
// go-sdk server dispatches on, or the gateway refuses the request. The reference is the SDK
// itself (its HTTP handler in stateless mode, with a middleware that records the decoded
// CallToolParamsRaw), not a model of it.

// toolNameCorpus are the seeds: plain calls and every way found to make readers disagree.
var toolNameCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","arguments":{"name":"destroy"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"destroy","Name":"peek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"peek","name":"destroy"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"destroy","name":"peek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"peek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"destroy","name":"peek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pe\u0065k"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pe\ud800ek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek\u0000"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"nam\u212a":"peek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"destroy"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"destroy"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek"},"params":{"name":"destroy"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"destroy"},"params":{"name":"peek"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","_meta":{"progressToken":1}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["peek"]}}`,
	` {"id":"x","method":"tools/call","jsonrpc":"2.0","params":{"arguments":{},"name":"peek"}} `,
}

// sdkReference is one go-sdk server shared by the calls of a test or fuzz worker; mu
// serialises them, since the name it records is one variable.
var sdkReference struct {
	once    sync.Once
	mu      sync.Mutex
	handler http.Handler
	called  string
	sawCall bool
}

// sdkToolName is the tool name the go-sdk server decodes from body, and whether it decoded a
// tools/call at all.
func sdkToolName(body []byte) (string, bool) {
	ref := &sdkReference
	ref.once.Do(func() {
		s := mcp.NewServer(&mcp.Implementation{Name: "reference", Version: "1"}, nil)
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
					ref.called, ref.sawCall = p.Name, true
				}
				return next(ctx, method, req)
			}
		})
		ref.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	})
	ref.mu.Lock()
	defer ref.mu.Unlock()
	ref.called, ref.sawCall = "", false
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ref.handler.ServeHTTP(httptest.NewRecorder(), req)
	return ref.called, ref.sawCall
}

// gatewayToolName is what the gateway makes of body: the tool it would check against the
// policy, and whether it would forward the message at all.
func gatewayToolName(body []byte) (msg *jsonrpc.Message, tool string, forwarded bool) {
	m, err := jsonrpc.Parse(body, jsonrpc.Options{Client: true})
	if err != nil {
		return nil, "", false
	}
	f, he := readClientFields(m)
	if he != nil {
		return nil, "", false
	}
	return m, f.name, true
}

func checkToolNameAgrees(t *testing.T, body []byte) {
	m, tool, forwarded := gatewayToolName(body)
	if !forwarded {
		return
	}
	// The bytes as the client sent them: if the SDK read them as a tools/call, the gateway
	// must have read the same call.
	if name, ok := sdkToolName(body); ok && (m.Method != "tools/call" || name != tool) {
		t.Fatalf("%q: the gateway reads method %q tool %q, the go-sdk tools/call %q", body, m.Method, tool, name)
	}
	// The bytes the worker receives: the gateway's encoding with the worker's own id.
	out := *m
	if out.ID != nil {
		out.ID = []byte("7")
	}
	name, ok := sdkToolName(out.Encode())
	if m.Method == "tools/call" && m.ID != nil && (!ok || name != tool) {
		t.Fatalf("%q: the gateway approves tool %q, the worker would run %q (decoded: %v)", body, tool, name, ok)
	}
	if m.Method != "tools/call" && ok {
		t.Fatalf("%q: the gateway reads method %q, the worker a tools/call of %q", body, m.Method, name)
	}
}

func TestToolNameAgreesWithSDK(t *testing.T) {
	for _, body := range toolNameCorpus {
		checkToolNameAgrees(t, []byte(body))
	}
	// The corpus must exercise both outcomes.
	if _, tool, ok := gatewayToolName([]byte(toolNameCorpus[0])); !ok || tool != "peek" {
		t.Errorf("a plain call is not approved as peek: %q %v", tool, ok)
	}
	if _, _, ok := gatewayToolName([]byte(toolNameCorpus[2])); ok {
		t.Error("the case-variant call is forwarded")
	}
}

func FuzzToolNameAgreesWithSDK(f *testing.F) {
	for _, body := range toolNameCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkToolNameAgrees(t, body)
	})
}
