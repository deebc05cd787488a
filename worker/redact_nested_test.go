//go:build linux

package worker

import (
	"encoding/json"
	"strings"
	"testing"
)

// A worker that logs, as JSON, an error holding a JSON text it was given or made (an HTTP
// body, an exception's payload) writes its credential escaped twice: PHP's "\/" becomes
// "\\\/", "\u002b" becomes "\\u002b". Such a line cannot be written out as the same JSON
// without the escapes, so it is replaced whole; one without the credential is left as it is.
func TestNestedEscapedCredentialIsRedacted(t *testing.T) {
	const cred = "AbC/opaque+token/SECRETPART=="
	p := &Process{secrets: secretSpellings([]byte(cred), nil)}
	line := []byte(`{"login":"AbC\/opaque\u002btoken\/SECRETPART=="}`) // PHP json_encode, and a \u escape
	for depth := 1; depth <= 3; depth++ {
		outer, _ := json.Marshal(map[string]string{"error": string(line)})
		line = outer
		got := string(p.Redacted(line))
		if strings.Contains(got, "SECRETPART") || got != nestedSecret {
			t.Errorf("escaped %d times more: redact(%s) = %s", depth, line, got)
		}
	}
	clean := []byte(`{"error":"{\"login\":\"AbC\\/other\\u002bthing\"}"}`)
	if got := p.Redacted(clean); string(got) != string(clean) {
		t.Errorf("a line without the credential was changed: %s", got)
	}
}

// A line that quotes the credential plainly and also in escapes within escapes (a PHP-style
// log line holding a token and the request that carried it): taking out the plain copy
// leaves the nested one, and the line is replaced whole all the same.
func TestPlainAndNestedCredentialAreBothRedacted(t *testing.T) {
	const cred = "AbC/opaque+token/SECRETPART=="
	p := &Process{secrets: secretSpellings([]byte(cred), nil)}
	inner := `{"login":"AbC\/opaque\u002btoken\/SECRETPART=="}`
	outer, _ := json.Marshal(map[string]string{"token": cred, "request": inner})
	if got := string(p.Redacted(outer)); got != nestedSecret {
		t.Errorf("redact(%s) = %s, want the line replaced whole", outer, got)
	}
}
