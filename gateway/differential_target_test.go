package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The differential test of prompts/get, resources/read and completion/complete's ref, as
// differential_test.go's for tools/call: whatever the bytes, the prompt name or resource URI
// the gateway decides on is the one the go-sdk server dispatches on, or the gateway refuses
// the request.

var targetCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summary"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"secret","Name":"summary"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"secret","name":"summary"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"n\u0061me":"secret","name":"summary"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"nam\u212a":"summary"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"sum\ud800mary"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summary","arguments":{"name":"secret"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":["summary"]}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///docs/a"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///hr/x","URI":"file:///docs/a"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"Uri":"file:///hr/x","uri":"file:///docs/a"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///hr/x","uri":"file:///docs/a"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"ur\u0069":"file:///hr/x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///docs/\u0061"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":7}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///docs/a"},"params":{"uri":"file:///hr/x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/list","Method":"resources/read","params":{"uri":"file:///hr/x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"summary"},"argument":{"name":"a","value":""}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///docs/a"},"argument":{"name":"a","value":""}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"secret","Name":"summary"},"argument":{"name":"a","value":""}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","type":"ref/resource","name":"secret","uri":"file:///docs/a"},"argument":{"name":"a","value":""}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"Ref":{"type":"ref/prompt","name":"secret"},"ref":{"type":"ref/prompt","name":"summary"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/tool","name":"secret"}}}`,
}

// sdkTargets is a go-sdk server that records what it decodes of prompts/get and
// resources/read; mu serialises the calls, as sdkReference's.
var sdkTargets struct {
	once    sync.Once
	mu      sync.Mutex
	handler http.Handler
	method  string
	target  string
}

// sdkTarget is the method and prompt name or resource URI the go-sdk decodes from body;
// method is empty when it decoded neither a prompts/get nor a resources/read.
func sdkTarget(body []byte) (method, target string) {
	ref := &sdkTargets
	ref.once.Do(func() {
		s := mcp.NewServer(&mcp.Implementation{Name: "reference", Version: "1"}, &mcp.ServerOptions{
			CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				return &mcp.CompleteResult{}, nil
			},
		})
		s.AddPrompt(&mcp.Prompt{Name: "summary"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		s.AddResource(&mcp.Resource{URI: "file:///docs/a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				switch p := req.GetParams().(type) {
				case *mcp.GetPromptParams:
					ref.method, ref.target = method, p.Name
				case *mcp.ReadResourceParams:
					ref.method, ref.target = method, p.URI
				case *mcp.CompleteParams:
					ref.method, ref.target = method, p.Ref.Name+p.Ref.URI
				}
				return next(ctx, method, req)
			}
		})
		ref.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	})
	ref.mu.Lock()
	defer ref.mu.Unlock()
	ref.method, ref.target = "", ""
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ref.handler.ServeHTTP(httptest.NewRecorder(), req)
	return ref.method, ref.target
}

// checkTargetAgrees: the target the gateway decides on is the one the SDK reads of the bytes
// the client sent and of the bytes the worker receives.
func checkTargetAgrees(t *testing.T, body []byte) {
	m, _, forwarded := gatewayToolName(body)
	if !forwarded {
		return
	}
	f, _ := readClientFields(m)
	if method, target := sdkTarget(body); method != "" && (method != m.Method || target != f.name) {
		t.Fatalf("%q: the gateway reads %s of %q, the go-sdk %s of %q", body, m.Method, f.name, method, target)
	}
	out := *m
	if out.ID != nil {
		out.ID = []byte("7")
	}
	method, target := sdkTarget(out.Encode())
	if gated(m.Method) && m.Method != "resources/subscribe" && m.ID != nil && (method != m.Method || target != f.name) {
		t.Fatalf("%q: the gateway approves %s of %q, the worker would get %s of %q", body, m.Method, f.name, method, target)
	}
	if !gated(m.Method) && method != "" {
		t.Fatalf("%q: the gateway reads method %q, the worker %s of %q", body, m.Method, method, target)
	}
}

func gated(method string) bool {
	_, ok := gatedKey[method]
	return ok
}

func TestTargetAgreesWithSDK(t *testing.T) {
	for _, body := range targetCorpus {
		checkTargetAgrees(t, []byte(body))
	}
	// The corpus must exercise both outcomes.
	for i, want := range map[int]string{0: "summary", 9: "file:///docs/a", 13: "file:///hr/x", 14: "file:///docs/a", 18: "summary", 19: "file:///docs/a"} {
		m, _, ok := gatewayToolName([]byte(targetCorpus[i]))
		if !ok {
			t.Errorf("%s is refused", targetCorpus[i])
		} else if f, _ := readClientFields(m); f.name != want {
			t.Errorf("%s: not approved as %q", targetCorpus[i], want)
		}
	}
	for _, i := range []int{1, 2, 3, 4, 5, 7, 8, 10, 11, 12, 15, 16, 20, 21, 22, 23} {
		if _, _, ok := gatewayToolName([]byte(targetCorpus[i])); ok {
			t.Errorf("%s is forwarded", targetCorpus[i])
		}
	}
}

func FuzzTargetAgreesWithSDK(f *testing.F) {
	for _, body := range targetCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkTargetAgrees(t, body)
	})
}
