package gateway

import (
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
)

// A POST's Content-Type decides whether gemgate reads the body as JSON (else 415), and a proxy
// or WAF in front picks its body parser by the same header. mime.ParseMediaType lowers the
// type with strings.ToLower (Unicode: U+0130 LATIN CAPITAL LETTER I WITH DOT ABOVE becomes an
// ASCII 'i') and trims it with strings.TrimSpace (Unicode: NO-BREAK SPACE, IDEOGRAPHIC SPACE,
// LINE SEPARATOR). HAProxy 2.6 reads "applİcation/json" and "application/json<NBSP>" as they
// are, not application/json (req.hdr(content-type),lower -m str application/json does not
// match them), so a WAF that inspects JSON bodies would skip a body gemgate took for a JSON
// call. Only the ASCII spelling of application/json, in any ASCII case, with HTTP white space
// around it, may pass; any byte outside printable ASCII, SP and HTAB refuses the value.
func TestContentTypeIsReadAsAProxyReadsIt(t *testing.T) {
	for _, ct := range []string{
		"appl\u0130cation/json",  // İ: strings.ToLower gives 'i'
		"APPL\u0130CATION/JSON",  // the same, upper case
		"application/json\u00a0", // trailing NO-BREAK SPACE
		"\u3000application/json", // leading IDEOGRAPHIC SPACE
		"application/json\u2028", // trailing LINE SEPARATOR
		"application/json\u0085", // trailing NEL
		"appl\u0130cation/json; charset=utf-8",
		"application/json; charset=\u00e9",      // non-ASCII in a parameter
		"application/json\x7f",                  // DEL
		"application/json\x0b",                  // VT: strings.TrimSpace trims it, HTTP does not
		"application/json\r",                    // CR
		"application/json, text/plain",          // a list is no media type
		"application/json; charset",             // a malformed parameter, refused as before
		"application/json text/plain; q=1",      // white space inside the type
		"application/json\u00a0; charset=utf-8", // NBSP before the parameters
	} {
		if he := postWithContentType(ct); he == nil || he.Status != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q (not application/json to a proxy in front): checkPostHeaders = %v, want 415", ct, he)
		}
	}
	// The spellings real clients send still pass.
	for _, ct := range []string{
		"application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8",
		" application/json\t", "application/json ; charset=utf-8", "application/json;", `application/json; charset="utf-8"`,
	} {
		if he := postWithContentType(ct); he != nil {
			t.Errorf("Content-Type %q: refused %v, want accepted", ct, he)
		}
	}
}

// Content-Type given twice. gemgate reads the first value (Header.Get); HAProxy's
// req.hdr(content-type) reads the last ("application/json" then "text/plain" gives
// text/plain), and a WAF may read either. With application/json first and text/plain last,
// gemgate would run the body as a JSON-RPC call that a WAF in front took for plain text and
// never inspected as JSON. The header decides how the body is read, so, like the other
// headers repeatedHeader guards, it is refused when repeated, even with equal values: 400
// with -32600, as a repeated Mcp-Session-Id is answered.
func TestRepeatedContentTypeIsRefused(t *testing.T) {
	for _, values := range [][]string{
		{"application/json", "text/plain"},
		{"application/json", "application/x-www-form-urlencoded"},
		{"application/json", "application/json"},
	} {
		r, _ := http.NewRequest(http.MethodPost, "http://gw.test/mcp", nil)
		for _, v := range values {
			r.Header.Add("Content-Type", v)
		}
		r.Header.Set("Accept", "application/json, text/event-stream")
		if repeatedHeader(r.Header) == nil && checkPostHeaders(r) == nil {
			t.Errorf("Content-Type %q: accepted (gemgate read %q, HAProxy's req.hdr reads %q); want refused",
				values, r.Header.Get("Content-Type"), values[len(values)-1])
		}
	}
}

// postWithContentType is checkPostHeaders' answer to a POST of this Content-Type from a client
// that accepts either form of answer.
func postWithContentType(ct string) *wire.Error {
	r, _ := http.NewRequest(http.MethodPost, "http://gw.test/mcp", nil)
	r.Header.Set("Content-Type", ct)
	r.Header.Set("Accept", "application/json, text/event-stream")
	return checkPostHeaders(r)
}
