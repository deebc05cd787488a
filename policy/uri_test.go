package policy

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

// uriCases are URIs a resource rule could read otherwise than a worker that normalizes them
// (RFC 3986 §6.2.2) before it resolves them, with the reason given, and URIs in normal form ("").
var uriCases = []struct{ uri, why string }{
	{"file:///hr/pay.txt", ""},
	{"file:///docs/", ""},
	{"test://static-binary", ""},
	{"test://template/42/data", ""},
	{"https://example.com", ""},
	{"https://user:Secret@example.com:8443/a?b=../c#..", ""},
	{"log://audit", ""},
	{"note:Shopping list", ""},
	{"urn:isbn:0451450523", ""},
	{"file:///my%20docs/a%C3%A9.txt", ""},
	{"file:///docs/a%2Cb", ""},
	{"file:///docs/../hr/pay.txt", "a '..' segment"},
	{"file:///docs/..", "a '..' segment"},
	{"file:///hr/./pay.txt", "a '.' segment"},
	{"note:x/../hr", "a '..' segment"},
	{"../hr/pay.txt", "a '..' segment"},
	{"file:////hr/pay.txt", "an empty segment ('//')"},
	{"file:///docs//pay.txt", "an empty segment ('//')"},
	{"file:///%68r/pay.txt", "the percent-encoded character %68"},
	{"file:///docs/%2e%2E/hr", "the percent-encoded character %2E"},
	{"file:///docs%2F..%2Fhr/pay.txt", "the percent-encoded character %2F"},
	{"file:///docs/%5c..%5chr", "the percent-encoded character %5C"},
	{"file:///docs/%7e", "the percent-encoded character %7E"},
	{"file:///docs\\..\\hr\\pay.txt", "a backslash"},
	{"file:///docs/%zz", "a '%' that starts no percent-encoding"},
	{"file:///docs/%4", "a '%' that starts no percent-encoding"},
	{"FILE:///hr/pay.txt", "an upper-case scheme"},
	{"https://Example.com/a", "an upper-case host"},
}

func TestURIRefusal(t *testing.T) {
	p := mustNew(t, Config{ResourceRules: []Rule{{URIs: []string{"file:///hr/*"}, Scope: "hr:read"}}})
	for _, c := range uriCases {
		if got := p.URIRefusal(c.uri); got != c.why {
			t.Errorf("URIRefusal(%q) = %q; want %q", c.uri, got, c.why)
		}
	}
	// Without a resource rule nothing decides on a URI, and none is refused.
	for _, cfg := range []Config{{}, {PromptRules: []Rule{{Prompts: []string{"x"}, Scope: "hr:read"}}}} {
		if got := mustNew(t, cfg).URIRefusal("file:///docs/../hr/pay.txt"); got != "" {
			t.Errorf("without resource rules: %q", got)
		}
	}
}

// FuzzURIRefusal checks the refusal against another reader: every URI it lets through names,
// to net/url and path.Clean as a worker might read it, the resource its text names: a
// lower-case scheme and host, a decoded path that cleaning leaves as it is, and no '/' that
// decoding adds.
func FuzzURIRefusal(f *testing.F) {
	for _, c := range uriCases {
		f.Add(c.uri)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if uriRefusal(uri) != "" {
			return
		}
		u, err := url.Parse(uri)
		if err != nil {
			return // the worker cannot read it as a URI either
		}
		if scheme, _, ok := strings.Cut(uri, ":"); ok && u.Scheme != "" && scheme != u.Scheme {
			t.Fatalf("%q: scheme %q read as %q", uri, scheme, u.Scheme)
		}
		if strings.ContainsFunc(u.Host, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
			t.Fatalf("%q: host %q", uri, u.Host)
		}
		raw, decoded := u.EscapedPath(), u.Path
		if u.Opaque != "" {
			raw = u.Opaque
			if decoded, err = url.PathUnescape(raw); err != nil {
				return
			}
		}
		if strings.Count(raw, "/") != strings.Count(decoded, "/") {
			t.Fatalf("%q: path %q decodes to %q", uri, raw, decoded)
		}
		if decoded == "" {
			return
		}
		clean := path.Clean(decoded)
		if strings.HasSuffix(decoded, "/") && clean != "/" {
			clean += "/"
		}
		if clean != decoded {
			t.Fatalf("%q: path %q cleans to %q", uri, decoded, clean)
		}
	})
}
