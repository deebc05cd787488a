package trace

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// A body can carry a credential: a form parameter (RFC 6750 §2.2, refused after the trace saw
// it) or a JSON field named like one. redact replaces every such value at any depth, keeping
// every other byte; a body cut short or neither JSON nor a form is redacted as far as it reads.

const redacted = "[redacted]"

// A field's value is secret when its name, lower case without '_' and '-', is one of
// credentialNames or ends in one of credentialSuffixes (accesstoken, clientsecret...).
var (
	credentialNames = map[string]bool{
		"bearer": true, "passwd": true, "authorization": true, "privatekey": true, "cookie": true,
		"setcookie": true, "assertion": true,
	}
	credentialSuffixes = []string{"token", "secret", "password", "apikey", "credential", "credentials"}
)

func isCredentialName(name string) bool {
	n := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
	// progressToken ends like a credential's name but is a protocol field worth seeing.
	return credentialNames[n] || n != "progresstoken" &&
		slices.ContainsFunc(credentialSuffixes, func(end string) bool { return strings.HasSuffix(n, end) })
}

func redact(body []byte) []byte {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return redactJSON(body)
	}
	if bytes.IndexByte(body, '=') >= 0 {
		return redactForm(body)
	}
	return body
}

// redactJSON scans strings: one followed by ':' is a key, and a credential key's value is
// replaced. It needs no valid JSON.
func redactJSON(b []byte) []byte {
	var out []byte // allocated at the first redaction
	last := 0      // b[last:] is not yet copied to out
	for i := 0; i < len(b); {
		if b[i] != '"' {
			i++
			continue
		}
		end := stringEnd(b, i)
		key := b[i:end]
		j := skipSpace(b, end)
		if j >= len(b) || b[j] != ':' || !isCredentialName(decodeKey(key)) {
			i = end
			continue
		}
		v := skipSpace(b, j+1)
		if v >= len(b) {
			i = v
			continue
		}
		out = append(out, b[last:v]...)
		out = append(out, `"`+redacted+`"`...)
		i = valueEnd(b, v)
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func redactForm(b []byte) []byte {
	parts := strings.Split(string(b), "&")
	changed := false
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if isCredentialName(name) {
			parts[i] = k + "=" + redacted
			changed = true
		}
	}
	if !changed {
		return b
	}
	return []byte(strings.Join(parts, "&"))
}

// stringEnd is the index just past the string starting at b[i], or len(b) if it never ends.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipSpace is the index of the first byte from b[i] on that is not JSON white space.
func skipSpace(b []byte, i int) int { return len(b) - len(bytes.TrimLeft(b[i:], " \t\r\n")) }

// valueEnd is the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[j])) {
		j++
	}
	return j
}

// decodeKey is a key's text, escapes resolved when it is a whole JSON string.
func decodeKey(quoted []byte) string {
	var s string
	if json.Unmarshal(quoted, &s) == nil {
		return s
	}
	return strings.Trim(string(quoted), `"`)
}
