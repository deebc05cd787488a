package auth

import (
	"slices"
	"strings"
)

// Challenge is an RFC 6750 Bearer challenge, the value of WWW-Authenticate.
type Challenge struct {
	Error            string   // "", "invalid_request", "invalid_token" or "insufficient_scope"
	Scopes           []string // the scopes the client should ask for
	ResourceMetadata string   // RFC 9728 metadata URL
	Description      string   // error_description: short, fixed text, never token content
}

// String renders the challenge, omitting empty parameters:
//
//	Bearer error="...", scope="...", resource_metadata="...", error_description="..."
//
// Values are quoted-strings with '"' and '\' escaped; control characters are dropped, as are
// scope tokens and description characters outside the RFC 6750 §3 character sets.
func (c Challenge) String() string {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	param := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteString(sep)
		b.WriteString(name)
		b.WriteString(`="`)
		writeQuoted(&b, value)
		b.WriteByte('"')
		sep = ", "
	}
	param("error", errorParam(c.Error))
	param("scope", scopeParam(c.Scopes))
	param("resource_metadata", c.ResourceMetadata)
	param("error_description", errorParam(c.Description))
	return b.String()
}

func writeQuoted(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"' || ch == '\\':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch < 0x20 || ch == 0x7f:
			// Dropped: a CR or LF must never reach a header.
		default:
			b.WriteByte(ch)
		}
	}
}

// errorParam keeps an error or error_description to the RFC 6750 §3 characters (%x20-21 /
// %x23-5B / %x5D-7E).
func errorParam(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || nqchar(r) {
			return r
		}
		return -1
	}, s)
}

// scopeParam joins the scope tokens that are valid NQCHAR sequences.
func scopeParam(scopes []string) string {
	var out []string
	for _, s := range scopes {
		if validScopeToken(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// validScopeToken reports whether s is an RFC 6749 scope-token: one or more NQCHARs.
func validScopeToken(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !nqchar(r) })
}

// nqchar reports whether r is an RFC 6749 NQCHAR: %x21 / %x23-5B / %x5D-7E.
func nqchar(r rune) bool {
	return r == 0x21 || (r >= 0x23 && r <= 0x5b) || (r >= 0x5d && r <= 0x7e)
}
