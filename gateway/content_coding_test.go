package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// contentTypeJSON reads the media type in ASCII now, but takes any charset parameter
// ("parameters (charset) are allowed"). gemgate reads every body as UTF-8 JSON whatever the
// charset says (RFC 8259 §8.1); a WAF or proxy that honours the declared charset decodes an
// ASCII JSON body sent as "charset=utf-16le" into CJK text, or a "charset=utf-7" body's
// "+ACI-" into '"', sees no JSON (or other JSON) and never inspects the call gemgate runs:
// the very split the ASCII-only reading meant to close. Both SDK clients send
// "application/json" without a charset; only UTF-8 (any case, quoted or not) may be declared.
func TestContentTypeCharsetOtherThanUTF8IsRefused(t *testing.T) {
	for _, ct := range []string{
		"application/json; charset=utf-16",
		"application/json; charset=utf-16le",
		"application/json; charset=UTF-16BE",
		"application/json; charset=utf-32",
		"application/json; charset=utf-7",
		`application/json; charset="utf-7"`,
		"application/json; charset=ibm037", // EBCDIC
	} {
		if he := postWithContentType(ct); he == nil || he.Status != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q (a body gemgate reads as UTF-8, a reader in front as another encoding): checkPostHeaders = %v, want 415", ct, he)
		}
	}
	for _, ct := range []string{"application/json; charset=utf-8", "application/json;charset=UTF-8", `application/json; charset="utf-8"`} {
		if he := postWithContentType(ct); he != nil {
			t.Errorf("Content-Type %q: refused %v, want accepted", ct, he)
		}
	}
}

// Same class: Content-Encoding decides how the body is read as much as Content-Type
// does, and gemgate ignores it. A body of plain JSON sent with "Content-Encoding: gzip" is
// run by gemgate, while a WAF or proxy that honours the coding (Envoy's decompressor, a WAF
// that inflates request bodies) fails to inflate it and passes it uninspected (or reads the
// inflated bytes of a real gzip body another way). RFC 9110 §8.4.1: a coding the server does
// not apply is answered 415. Neither SDK client compresses its requests.
func TestPostWithContentEncodingIsRefused(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	for _, ce := range []string{"gzip", "deflate", "br", "x-gzip"} {
		params := map[string]any{"name": "echo", "arguments": map[string]any{"text": "ran"}, "_meta": sessionlessMeta()}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(mustJSON(t, params)) + `}`
		r := c.post(body, sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "echo", "Content-Encoding", ce)
		if r.status != http.StatusUnsupportedMediaType {
			t.Errorf("POST with Content-Encoding: %s and a body gemgate reads as plain JSON: status %d, body %s; want 415", ce, r.status, r.body)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
