package jsonrpc

import (
	"encoding/json"
	"testing"
)

// A client message is JSON: the only white space around it is space, tab, CR and LF (RFC
// 8259 §2). bytes.TrimSpace also strips \f, \v, NEL, NBSP, U+2028, U+3000 and the other
// Unicode spaces, so a body that no JSON reader in front of gemgate (a WAF, a proxy that
// inspects or logs the body) nor the go-sdk's own transport accepts, is taken as a valid
// message and forwarded, re-encoded, to the worker: the intermediary and gemgate read two
// different things (one "not JSON", the other a tools/call).
func TestParseClientRefusesNonJSONWhitespace(t *testing.T) {
	const msg = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_note"}}`
	for _, ws := range []string{"\f", "\v", "\u0085", "\u00a0", "\u2028", "\u3000"} {
		for _, body := range []string{ws + msg, msg + ws} {
			if json.Valid([]byte(body)) {
				t.Fatalf("%q: encoding/json accepts it, the test is wrong", body)
			}
			if m, err := Parse([]byte(body), Options{Client: true}); err == nil {
				t.Errorf("Parse(%q, Options{Client: true}) accepted a body that is not JSON: method %q", body, m.Method)
			}
		}
	}
}
