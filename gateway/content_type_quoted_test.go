package gateway

import (
	"net/http"
	"testing"
)

// fa4d2f0 refuses RFC 2231 parameters and quoted-pairs so that no reader in front takes
// another charset than gemgate. A quoted-string that holds ';' and "charset=" is the same
// split one step over: mime.ParseMediaType reads one parameter x whose value is
// "; charset=utf-16; y=" and no charset, so gemgate reads the body as UTF-8; a reader that
// splits the parameters at ';' (Rack's MediaType.params, most hand-written parsers, regex
// rules in WAFs) reads charset=utf-16.
func TestContentTypeQuotedStringHidingCharsetIsRefused(t *testing.T) {
	for _, ct := range []string{
		`application/json; x="; charset=utf-16; y="`,
		`application/json; x=";charset=utf-16"`,
	} {
		if he := postWithContentType(ct); he == nil || he.Status != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q (charset=utf-16 to a reader that splits at ';'): checkPostHeaders = %v, want 415", ct, he)
		}
	}
}
