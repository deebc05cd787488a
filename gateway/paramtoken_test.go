package gateway

import (
	"strings"
	"testing"
)

// TestParamTokenIsTheTcharSetLessStar: a Content-Type parameter's name and bare value are
// RFC 9110 tokens (tchar: "!#$%&'*+-.^_`|~", DIGIT, ALPHA) without RFC 2231's '*', byte for
// byte; '{' and '}', which an RFC 2045 token (isToken) allows, are refused.
func TestParamTokenIsTheTcharSetLessStar(t *testing.T) {
	const tchar = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	for c := 0; c < 256; c++ {
		want := c != '*' && strings.IndexByte(tchar, byte(c)) >= 0
		if got := paramToken("a" + string([]byte{byte(c)})); got != want {
			t.Errorf("paramToken(%q) = %v, want %v", "a"+string([]byte{byte(c)}), got, want)
		}
	}
	if paramToken("") {
		t.Error("the empty string is a token")
	}
	if !contentTypeJSON("application/json; charset=utf-8") || contentTypeJSON("application/json; x={y}; charset=utf-8") {
		t.Error("contentTypeJSON does not read its parameters as tchar tokens")
	}
}
