package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// rev2: an integer argument mirrored in Mcp-Param-* is compared after strconv.ParseFloat of
// the header, which takes "1e4", "+10000", "10000.0e0", "0x1.388p+13" and "010000" for 10000.
// A proxy or WAF that routes or filters on the header (its whole point, SEP-2243) sees those
// strings, not 10000: a rule "deny Mcp-Param-Amount matching ^[0-9]{5,}$" passes "1e4",
// and the worker runs with 10000. The TypeScript SDK's server refuses all of them (its
// CANONICAL_DECIMAL, /^-?\d+(\.\d+)?$/, gates the numeric comparison "so '0x1a', ' 42 ',
// '1e3' never coerce"); both SDK clients send the decimal integer (strconv.FormatInt in the
// go-sdk, String(n) in the TypeScript SDK). One value, one spelling: only the decimal form
// may match.
func TestParamIntegerHasOneSpelling(t *testing.T) {
	bindings := schemaBindings(json.RawMessage(`{"properties":{"amount":{"type":"integer","x-mcp-header":"Amount"}}}`), nil, nil)
	check := func(header string) *httpError {
		msg := &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call",
			Params: json.RawMessage(`{"name":"pay","arguments":{"amount":10000}}`)}
		h := http.Header{}
		h.Set(paramHeaderPrefix+"Amount", header)
		return checkParamHeaders(h, msg, bindings)
	}
	if he := check("10000"); he != nil {
		t.Fatalf("Mcp-Param-Amount: 10000 for amount 10000: refused %v", he)
	}
	for _, header := range []string{"1e4", "1E4", "+10000", "10000e0", "0x1.388p+13", "0x2710p0", "010000", "=?base64?MWU0?="} {
		if he := check(header); he == nil {
			t.Errorf("Mcp-Param-Amount: %q for amount 10000: accepted; a proxy reads %q, want 400 -32020", header, header)
		}
	}
}
