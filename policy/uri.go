package policy

import (
	"strconv"
	"strings"
)

// URIRefusal says why uri cannot be decided on by resource rules, or "" when it can. Rules
// match a URI's text, and a worker may first resolve it as RFC 3986 normalizes it: a path
// with a '.' or '..' segment or an empty one (`//`), a percent-encoded unreserved character,
// '/' or '\', a backslash, or an upper-case scheme or host names another resource than its
// text, so `file:///docs/../hr/pay` would pass a rule on `file:///hr/`. Such a URI is
// refused while any resource rule decides (DESIGN §9, invariant 6: what the gateway decides on
// is what the worker reads); without one, nothing is decided and nothing refused.
func (p *Policy) URIRefusal(uri string) string {
	if len(p.rules[KindResource]) == 0 {
		return ""
	}
	return uriRefusal(uri)
}

func uriRefusal(uri string) string {
	if strings.IndexByte(uri, '\\') >= 0 {
		return "a backslash"
	}
	for i := 0; i < len(uri); i++ {
		if uri[i] != '%' {
			continue
		}
		c, err := strconv.ParseUint(uri[i+1:min(i+3, len(uri))], 16, 8)
		switch {
		case err != nil || i+3 > len(uri):
			return "a '%' that starts no percent-encoding"
		case unreserved(byte(c)) || c == '/' || c == '\\':
			return "the percent-encoded character " + strings.ToUpper(uri[i:i+3])
		}
	}
	// Without a scheme, a leading "//" is read as an authority by some readers and as an
	// empty segment by others (net/url's "///x"): left a path here, its empty segment refuses it.
	rest, _, _ := strings.Cut(uri, "#")
	rest, _, _ = strings.Cut(rest, "?")
	scheme, after, hasScheme := strings.Cut(rest, ":")
	if hasScheme = hasScheme && !strings.ContainsAny(scheme, "/"); hasScheme {
		if scheme != strings.ToLower(scheme) {
			return "an upper-case scheme"
		}
		rest = after
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok && hasScheme {
		authority, path, slash := strings.Cut(after, "/")
		if host := authority[strings.LastIndexByte(authority, '@')+1:]; host != strings.ToLower(host) {
			return "an upper-case host"
		}
		rest = ""
		if slash {
			rest = "/" + path
		}
	}
	segments := strings.Split(rest, "/")
	for i, s := range segments {
		switch {
		case s == "." || s == "..":
			return "a '" + s + "' segment"
		case s == "" && i > 0 && i < len(segments)-1:
			return "an empty segment ('//')"
		}
	}
	return ""
}

// unreserved is RFC 3986's unreserved set, which a normalized URI never percent-encodes.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}
