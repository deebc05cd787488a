package gateway

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// contentTypeJSON takes the charset from mime.ParseMediaType, which lets an RFC 2231
// starred "charset*=" parameter overwrite a plain "charset=" one (ParseMediaType stitches the
// starred parameters in after the plain ones, with no duplicate check between the two). So
// "charset=utf-16" then "charset*=" with the value utf-8 (the first case below) is UTF-8 to gemgate, while a proxy or WAF in front
// that reads the plain charset parameter (none of them implement RFC 2231 for Content-Type)
// decodes the body as UTF-16 and sees no JSON: the split 1a1f0fd meant to close.
func TestContentTypeCharsetRFC2231OverrideIsRefused(t *testing.T) {
	for _, ct := range []string{
		"application/json; charset=utf-16; charset*=utf-8''utf-8",
		"application/json; charset=utf-7; charset*=utf-8''UTF-8",
		"application/json; charset=utf-16le; charset*0=utf-8",
		`application/json; charset="utf\-8"`, // a quoted-pair, which readers undo or keep each their own way
	} {
		if he := postWithContentType(ct); he == nil || he.Status != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q (UTF-16/UTF-7 to a reader of the plain charset parameter): checkPostHeaders = %v, want 415", ct, he)
		}
	}
}

// The byte-identical shortcut in checkMirrorHeaders (h == body) skips the =?base64?…?=
// decoding: a body name that is itself in the sentinel form ("=?base64?ZWNobw==?=") with that
// same string as Mcp-Name is accepted, while a SEP-2243 reader of the header (a proxy or WAF
// routing on Mcp-Name, the TypeScript SDK server's inboundClassification) decodes it to "echo".
// Before 1a1f0fd plainHeaderValue decoded it and refused the mismatch; SEP-2243 (and the
// go-sdk's requiresBase64Encoding) says a value of the sentinel's shape is always encoded, so
// such a header always stands for its decoded value. The shortcut must apply only to a value
// that is not in the sentinel form.
func TestMcpNameSentinelLiteralIsNotTakenAsItsOwnBytes(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	lit := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("echo")) + "?="
	r := c.sessionless("1", "tools/call", map[string]any{"name": lit, "arguments": map[string]any{"text": "x"}})
	if !(r.status == http.StatusBadRequest && len(r.msgs) == 1 && r.msgs[0].Error != nil &&
		rpcError(t, r.msgs[0]).Code == sessionless.CodeHeaderMismatch) {
		t.Errorf("tools/call name %q with Mcp-Name %q (which a SEP-2243 reader decodes to \"echo\"): status %d, body %s; want 400 -32020 header mismatch",
			lit, lit, r.status, r.body)
	}
}
