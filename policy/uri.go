package policy

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// URIRefusal says why uri cannot be decided on by resource rules, or "" when it can. Rules
// match a URI's text, and a worker may first resolve it as RFC 3986 normalizes it: a path
// with a '.' or '..' segment (in the query and fragment too, decoded or not: a worker may read
// them as a path) or an empty one (`//`), a percent-encoded '\', or unreserved character or
// '/' before the query, a backslash, or an upper-case scheme or host names another resource than its
// text, so `file:///docs/../hr/pay` would pass a rule on `file:///hr/`; so does what a WHATWG
// reader (the TypeScript SDK's server) writes otherwise (a control character, `file:/hr/pay`,
// `file://localhost/hr/pay`, a default port: authorityRefusal). Such a URI is refused while
// any resource rule decides (DESIGN §9, invariant 6: what the gateway decides on is what the
// worker reads); without one, nothing is decided and nothing refused. What a worker may read
// of a URI it lets through, the rules decide on too (uriReadings).
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
	// A WHATWG reader (the TypeScript SDK's new URL(uri)) drops tabs and newlines anywhere,
	// and C0 controls and spaces at either end: " file:///hr/x" or "log://au\tdit" is read
	// as the resource a rule names.
	if strings.ContainsFunc(uri, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "a control character"
	}
	if strings.HasPrefix(uri, " ") || strings.HasSuffix(uri, " ") {
		return "a space at either end"
	}
	if why := percentRefusal(uri); why != "" {
		return why
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
	after, ok := strings.CutPrefix(rest, "//")
	if _, special := defaultPorts[scheme]; hasScheme && special && !ok {
		// A WHATWG reader gives it the "//": file:/hr/x is file:///hr/x, https:example.com is
		// https://example.com/.
		return "the scheme " + scheme + ": without '//'"
	}
	if ok && hasScheme {
		authority, path, slash := strings.Cut(after, "/")
		host := authority[strings.LastIndexByte(authority, '@')+1:]
		if withoutPercentEncodings(host) != strings.ToLower(withoutPercentEncodings(host)) {
			return "an upper-case host"
		}
		if scheme == "file" && authority != "" {
			// Workers read a file URI by its path: the go-sdk's ignores the host, a WHATWG reader
			// drops localhost.
			return "a file URI with a host"
		}
		if why := authorityRefusal(scheme, authority, host); why != "" {
			return why
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
	return dotSegmentAnywhere(uri)
}

// percentRefusal says why a percent-encoding of uri names another resource than its text, or
// "": a '%' that starts none, an encoded '\\', or before the query an encoded unreserved
// character or '/'. A query or a fragment is not resolved: a percent-encoding there
// ("?next=%2Fhome") is left to the readings (uriReadings), which decode it.
func percentRefusal(uri string) string {
	end := strings.IndexAny(uri, "?#")
	if end < 0 {
		end = len(uri)
	}
	for i := 0; i < len(uri); i++ {
		if uri[i] != '%' {
			continue
		}
		c, err := strconv.ParseUint(uri[i+1:min(i+3, len(uri))], 16, 8)
		switch {
		case err != nil || i+3 > len(uri):
			return "a '%' that starts no percent-encoding"
		case c == '\\' || i < end && (unreserved(byte(c)) || c == '/'):
			return "the percent-encoded character " + strings.ToUpper(uri[i:i+3])
		}
	}
	return ""
}

// dotSegmentAnywhere finds a '.' or '..' segment in the whole of uri, its query and fragment
// too, as it is and decoded: a worker on a template file:///{+path} gets them in its variable
// (the TypeScript SDK's UriTemplate.match) and may resolve them as a path: file:///docs?/../hr/pay
// is /hr/pay to it.
func dotSegmentAnywhere(uri string) string {
	decoded, _ := url.PathUnescape(uri) // every '%' starts a percent-encoding: percentRefusal
	for _, text := range []string{uri, decoded} {
		for _, s := range strings.Split(text, "/") {
			if s == "." || s == ".." {
				return "a '" + s + "' segment"
			}
		}
	}
	return ""
}

// unreserved is RFC 3986's unreserved set, which a normalized URI never percent-encodes.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}

// defaultPorts are the WHATWG URL standard's special schemes, whose URIs a WHATWG reader
// normalizes, with their default ports ("" for file).
var defaultPorts = map[string]string{"file": "", "http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// uriReadings are the texts resource rules decide uri on, every one of which must pass: uri,
// and what a worker may read of it: its text without the query and fragment (url.Parse's
// Path); a special scheme's URI with an empty path with the path '/' (a WHATWG reader's: file:// is
// file:///); its
// percent-encodings decoded (url.Parse's Path: file:///hr/a%20b is the file "a b"); its text
// without the query, the fragment and the last segment's ';' parameters (Python's urlparse:
// https://x/a;b is /a); and the
// characters a WHATWG reader percent-encodes, encoded (file:///hr/a b is file:///hr/a%20b,
// note:a é is note:a %C3%A9).
func uriReadings(uri string) []string {
	out := []string{uri}
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	base := uri
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		base = uri[:i]
		add(base)
	}
	if semi := strings.IndexByte(base[strings.LastIndexByte(base, '/')+1:], ';'); semi >= 0 {
		// Python's urlparse reads a web URI's last segment without its parameters.
		add(base[:strings.LastIndexByte(base, '/')+1+semi])
	}
	scheme, after, ok := strings.Cut(base, "://")
	if _, special := defaultPorts[scheme]; ok && special && !strings.Contains(after, "/") {
		add(base + "/")
		add(base + "/" + uri[len(base):])
	}
	for _, s := range slices.Clone(out) {
		if decoded, err := url.PathUnescape(s); err == nil {
			add(decoded)
		}
		add(whatwgEncoded(s))
	}
	return out
}

// whatwgEncoded is s with what a WHATWG reader percent-encodes percent-encoded, each part by
// its set: every byte that is not ASCII; in a path that is not opaque (an opaque one: note:x,
// a scheme a WHATWG reader does not know without '/'), a space, '"', '<', '>', '`', '{' and
// '}'; in a query a space, '"', '<', '>' and, for a special scheme, an apostrophe; in a fragment a
// space, '"', '<', '>' and '`'.
func whatwgEncoded(s string) string {
	query, fragment := len(s), len(s)
	if i := strings.IndexByte(s, '#'); i >= 0 {
		query, fragment = i, i
	}
	if i := strings.IndexByte(s[:fragment], '?'); i >= 0 {
		query = i
	}
	scheme, rest, hasScheme := strings.Cut(s[:query], ":")
	_, special := defaultPorts[scheme]
	pathSet := " \"<>`{}"
	if hasScheme && !strings.ContainsAny(scheme, "/") && !special && !strings.HasPrefix(rest, "/") {
		pathSet = "" // an opaque path
	}
	querySet := " \"<>"
	if special {
		querySet += "'"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		set := pathSet
		switch {
		case i > fragment:
			set = " \"<>`"
		case i > query:
			set = querySet
		}
		c := s[i]
		if c < 0x80 && strings.IndexByte(set, c) < 0 {
			if b.Len() > 0 {
				b.WriteByte(c)
			}
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s) + 16)
			b.WriteString(s[:i])
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// authorityRefusal says why a WHATWG reader would read an authority otherwise than its text,
// or "": an empty user or password (dropped), an empty port or one with a leading zero or, for
// a special scheme, its default port (dropped), an IPv6 host not in its shortest form, and a
// special scheme's host that is not ASCII or is percent-encoded (IDNA) or is an IPv4 address
// in another form than dotted decimal (0x7f.1).
func authorityRefusal(scheme, authority, host string) string {
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if user, password, _ := strings.Cut(authority[:at], ":"); user == "" || strings.HasSuffix(authority[:at], ":") && password == "" {
			return "an empty user or password"
		}
	}
	name := host
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		name = host[:i]
		switch port := host[i+1:]; {
		case port == "":
			return "an empty port"
		case len(port) > 1 && port[0] == '0', port == defaultPorts[scheme]:
			if len(port) > 6 {
				port = port[:1] + "..." // the reason is quoted: bounded
			}
			return "a port a reader writes otherwise (" + port + ")"
		}
	}
	if strings.HasPrefix(name, "[") {
		// A WHATWG reader writes an IPv6 address, whatever the scheme, in its shortest form
		// ([0::1] is [::1]) and refuses a zone.
		if a, err := netip.ParseAddr(strings.TrimSuffix(name[1:], "]")); err != nil || !a.Is6() || a.Zone() != "" || "["+whatwgIPv6(a)+"]" != name {
			return "an IPv6 address not in its shortest form"
		}
		return ""
	}
	if _, special := defaultPorts[scheme]; !special || scheme == "file" {
		return ""
	}
	if name == "" {
		return "an empty host" // a WHATWG reader takes the path's first segment for it
	}
	if strings.IndexByte(name, '%') >= 0 {
		return "a percent-encoded host" // a WHATWG reader decodes it, then maps it (IDNA)
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r >= 0x80 }) {
		return "a host that is not ASCII"
	}
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	if last := labels[len(labels)-1]; last != "" && ('0' <= last[0] && last[0] <= '9') {
		if a, err := netip.ParseAddr(name); err != nil || !a.Is4() || a.String() != name {
			return "an IPv4 address not in dotted decimal"
		}
	}
	return ""
}

// whatwgIPv6 is a as a WHATWG reader writes it: RFC 5952's form, but an IPv4-mapped address in
// hexadecimal (::ffff:7f00:1).
func whatwgIPv6(a netip.Addr) string {
	if !a.Is4In6() {
		return a.String()
	}
	b := a.As16()
	return fmt.Sprintf("::ffff:%x:%x", uint16(b[12])<<8|uint16(b[13]), uint16(b[14])<<8|uint16(b[15]))
}

// withoutPercentEncodings is s without its percent-encodings, whose hexadecimal digits may be
// upper-case in a normal form.
func withoutPercentEncodings(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
