package sessionless

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// An integer argument mirrored in Mcp-Param-* is compared by value (the transport's "42.0"
// equals "42"), but strconv.ParseFloat would also take "1e4", "+10000", "10000.0e0",
// "0x1.388p+13" and "010000" for 10000. A proxy or WAF that routes or filters on the header
// (its whole point, SEP-2243) sees those strings, not 10000: a rule "deny Mcp-Param-Amount
// matching ^[0-9]{5,}$" would pass "1e4", and the worker would run with 10000. The TypeScript
// SDK's server refuses all of them (its CANONICAL_DECIMAL, /^-?\d+(\.\d+)?$/, gates the
// numeric comparison "so '0x1a', ' 42 ', '1e3' never coerce"); both SDK clients send the
// decimal integer (strconv.FormatInt in the go-sdk, String(n) in the TypeScript SDK). Only the
// plain decimal form, without leading zeros, may match.
func TestParamIntegerHasOneSpelling(t *testing.T) {
	bindings := schemaBindings(json.RawMessage(`{"properties":{"amount":{"type":"integer","x-mcp-header":"Amount"}}}`), nil, nil)
	check := func(amount, header string) *wire.Error {
		msg := &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call",
			Params: json.RawMessage(`{"name":"pay","arguments":{"amount":` + amount + `}}`)}
		h := http.Header{}
		h.Set(ParamHeaderPrefix+"Amount", header)
		return checkParamHeaders(h, msg, bindings)
	}
	for amount, headers := range map[string][]string{
		"10000":            {"10000", "10000.0", "10000.000", "=?base64?MTAwMDA=?="},
		"-10000":           {"-10000", "-10000.0"},
		"0":                {"0", "0.0", "-0"},
		"1e4":              {"10000"}, // the body is JSON: its number is read by value
		"9007199254740991": {"9007199254740991"},
	} {
		for _, header := range headers {
			if he := check(amount, header); he != nil {
				t.Errorf("Mcp-Param-Amount: %q for amount %s: refused %v", header, amount, he)
			}
		}
	}
	for amount, headers := range map[string][]string{
		"10000": {"1e4", "1E4", "+10000", "10000e0", "0x1.388p+13", "0x2710p0", "010000", "=?base64?MWU0?=",
			"10000.", ".10000", "1_0000", " 10000", "10000 ", "-10000", "10000.5", "10000.0e0", "Infinity", ""},
		"0":                {"00", "-00", "+0", "0x0", ".0", "0.", "-", "=?base64??=" /* the empty value */},
		"-10000":           {"10000", "-010000", "--10000"},
		"9007199254740991": {"9007199254740991.0000000001", "9007199254740992"},
		// Past 2^53-1 a JSON number has no one value: 2^53+1 reads as 2^53 in a float64 and
		// as itself in an int64, so no header can say which one the worker got.
		"9007199254740992": {"9007199254740992"},
		"9007199254740993": {"9007199254740992", "9007199254740993"},
	} {
		for _, header := range headers {
			he := check(amount, header)
			if he == nil {
				t.Errorf("Mcp-Param-Amount: %q for amount %s: accepted; a proxy reads %q, want 400 -32020", header, amount, header)
			} else if he.Status != http.StatusBadRequest || he.Code != CodeHeaderMismatch {
				t.Errorf("Mcp-Param-Amount: %q for amount %s: refusal %d %d, want 400 -32020", header, amount, he.Status, he.Code)
			}
		}
	}
}
