package sessionless

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// An argument mirrored in an Mcp-Param-* header is one value to gemgate, the proxy in front and
// the worker. A lone UTF-16 surrogate escape is not: encoding/json reads it as U+FFFD, so the
// header =?base64?77+9?= (U+FFFD) matched "\ud800" to gemgate, while a worker in JavaScript or
// Python keeps the lone surrogate, which no header can spell. Refused, as Mcp-Name is for the
// name it mirrors (Object.String), and as every string gemgate decides on is.
func TestParamHeaderRefusesLoneSurrogateArgument(t *testing.T) {
	bindings := schemaBindings(json.RawMessage(`{"properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`), nil, nil)
	for _, args := range []string{`{"region":"\ud800"}`, `{"region":"eu\udfff"}`} {
		msg := &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"t","arguments":` + args + `}`)}
		var decoded struct{ Region string }
		_ = json.Unmarshal(json.RawMessage(args), &decoded)
		h := http.Header{}
		h.Set(ParamHeaderPrefix+"Region", "=?base64?"+b64(decoded.Region)+"?=")
		if he := checkParamHeaders(h, msg, bindings); he == nil {
			t.Errorf("%s with Mcp-Param-Region %s (U+FFFD where the argument has a lone surrogate): accepted", args, h.Get(ParamHeaderPrefix+"Region"))
		} else if he.Status != http.StatusBadRequest || he.Code != CodeHeaderMismatch {
			t.Errorf("%s: refusal %d %d, want 400 -32020", args, he.Status, he.Code)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
