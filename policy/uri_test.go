package policy

import (
	"net/url"
	"path"
	"strconv"
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
	{"https://example.com/login?next=%2Fhome%2Fa", ""},
	{"https://example.com/a#%2F", ""},
	{"https://example.com/a?next=%2F..%2Fb", "a '..' segment"},
	{"file:///docs?%5C", "the percent-encoded character %5C"},
	{"log://caf%C3%A9/x", ""},
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
	{"note://ideas/\u65e5\u672c", ""},
	{"https://[::1]:8443/a", ""},
	{"https://192.0.2.1/a", ""},
	{"file:///h\tr/pay.txt", "a control character"},
	{" file:///hr/pay.txt", "a space at either end"},
	{"file:/hr/pay.txt", "the scheme file: without '//'"},
	{"https:example.com", "the scheme https: without '//'"},
	{"file://localhost/hr/pay.txt", "a file URI with a host"},
	{"log://@audit", "an empty user or password"},
	{"log://user:@audit", "an empty user or password"},
	{"log://audit:", "an empty port"},
	{"https://example.com:443/", "a port a reader writes otherwise (443)"},
	{"log://audit:080", "a port a reader writes otherwise (080)"},
	{"https://ex\u00e4mple.com/", "a host that is not ASCII"},
	{"http://0x7f.1/", "an IPv4 address not in dotted decimal"},
	// The edges of each character class, so that a class one character wider or narrower fails.
	{"file:///a%40b", ""},
	{"file:///a%41b", "the percent-encoded character %41"},
	{"file:///a%5Ab", "the percent-encoded character %5A"},
	{"file:///a%5Bb", ""},
	{"file:///a%60b", ""},
	{"file:///a%61b", "the percent-encoded character %61"},
	{"file:///a%7Ab", "the percent-encoded character %7A"},
	{"file:///a%7Bb", ""},
	{"file:///a%2Cb", ""},
	{"file:///a%30b", "the percent-encoded character %30"},
	{"file:///a%39b", "the percent-encoded character %39"},
	{"file:///a%3Ab", ""},
	{"file:///a%41", "the percent-encoded character %41"},
	{"note:a\x1fb", "a control character"},
	{"note:a b~", ""},
	{"note:a\x7fb", "a control character"},
	{"https://example.com:0/", ""},
	{"https://example.com:00/", "a port a reader writes otherwise (00)"},
	{"https://example.com:012345/", "a port a reader writes otherwise (012345)"},
	{"https://example.com:0123456/", "a port a reader writes otherwise (0...)"},
	{"https://a\u0080b.example/", "a host that is not ASCII"},
	{"https://a~b.example/", ""},
	{"http://1.2.3.00/", "an IPv4 address not in dotted decimal"},
	{"http://1.2.3.9999/", "an IPv4 address not in dotted decimal"},
	{"http://1.2.3.255/", ""},
	{"file:///a%2Db", "the percent-encoded character %2D"},
	{"\\hr\\pay.txt", "a backslash"},
	{"?x=%41", ""},
	{"https://:8443/a", "an empty host"},
	{"https://%C3%A4x.com/", "a percent-encoded host"},
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
		// What a worker reading by path (the go-sdk's file handler) or a WHATWG reader drops or
		// adds: a file URI's host, its "//", an empty user, an empty or default port.
		if _, special := defaultPorts[u.Scheme]; special && (u.Opaque != "" || u.OmitHost || u.Scheme == "file" && u.Host != "") {
			t.Fatalf("%q: a %s URI read with host %q, opaque %q", uri, u.Scheme, u.Host, u.Opaque)
		}
		if u.User != nil && u.User.Username() == "" {
			t.Fatalf("%q: an empty user", uri)
		}
		if port := u.Port(); port == defaultPorts[u.Scheme] && port != "" || strings.HasSuffix(u.Host, ":") {
			t.Fatalf("%q: port %q", uri, port)
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

// fileWorkerURIs are URIs a go-sdk file worker reads as a file under /hr/ or next to it
// (a query, a fragment, a dot or empty segment, an encoded dot): the fuzz target's seeds here,
// and read through a real go-sdk server by gateway's TestResourceRuleReadsWhatAFileWorkerReads.
var fileWorkerURIs = []string{
	"file:///hr/pay.txt", "file:///hr/pay.txt?", "file:///hr/pay.txt#", "file:///hr/pay.txt?/",
	"file:///hr/pay.txt#/", "file:///hr/pay.txt?x=/y", "file:///hr/pay.txt#/../../docs/a",
	"file:///hr/pay.txt?a#b/c", "file:///hr/x/..", "file:///hr/%2e", "file:///hr//pay.txt",
}

// FuzzResourceRuleReadsWhatAFileWorkerReads checks the resource rules against a model of a
// go-sdk file worker's reading of a URI (gateway's TestResourceRuleReadsWhatAFileWorkerReads
// reads the seeds below through a real go-sdk server, here kept free of the SDK so that each
// mutant of the mutation run builds quickly): a URI its template
// file:///{+path} matches (file:/// and then RFC 3986's reserved, unreserved and '%'
// characters) that url.Parse reads as a path under /hr/ is refused, before or by a rule on
// file:///hr/* (a file directly in /hr) or on the prefix file:///hr/, for a token without hr:read.
func FuzzResourceRuleReadsWhatAFileWorkerReads(f *testing.F) {
	for _, c := range uriCases {
		f.Add(c.uri)
	}
	for _, s := range fileWorkerURIs {
		f.Add(s)
	}
	for _, s := range []string{"file:///hr/a?x=/y#z", "file:///hr/a%3F/b"} {
		f.Add(s)
	}
	glob := mustNew(f, Config{ExtraScopes: []string{"hr:read"},
		ResourceRules: []Rule{{Name: "hr-files", URIs: []string{"file:///hr/*"}, Scope: "hr:read"}}})
	prefix := mustNew(f, Config{ExtraScopes: []string{"hr:read"},
		ResourceRules: []Rule{{Name: "hr-tree", Allow: `!uri.startsWith("file:///hr/") || "hr:read" in scopes`}}})
	f.Fuzz(func(t *testing.T, uri string) {
		rest, ok := strings.CutPrefix(uri, "file:///")
		if !ok || strings.ContainsFunc(rest, func(r rune) bool {
			return r != '%' && (r > 0x7f || !unreserved(byte(r)) && !strings.ContainsRune(":/?#[]@!$&'()*+,;=", r))
		}) {
			return // the template does not match it
		}
		u, err := url.Parse(uri)
		if err != nil || u.Scheme != "file" {
			return
		}
		// A file is not opened through a trailing '/': file:///hr/a/ reads no file directly in /hr.
		read := path.Clean(u.Path)
		dir, _ := path.Split(read)
		for _, c := range []struct {
			p     *Policy
			under bool
		}{{glob, dir == "/hr/" && !strings.HasSuffix(u.Path, "/")}, {prefix, strings.HasPrefix(read, "/hr/")}} {
			if !c.under || c.p.URIRefusal(uri) != "" {
				continue
			}
			a := c.p.DecideToken(Token{Scopes: []string{"mcp:use", "mcp:write"}})
			if v, _ := c.p.ExplainKind(KindResource, a, uri, nil); v == Allowed {
				t.Fatalf("%q: the worker reads %s; the rules allow it without hr:read", uri, read)
			}
		}
	})
}

// whatwgReadings are URIs the TypeScript SDK's McpServer (1.32.2) reads as another one: it
// looks a resources/read up by new URL(uri).toString(), the WHATWG URL standard's reading,
// which drops tabs and newlines anywhere and C0 controls and spaces at either end, gives a
// special scheme's URI its "//", a file URI no localhost and a web URI no default port and a
// '/' for an empty path. Those of the file, log and https://example.com/ resources were read as
// the resource registerResource registered, by a server of that SDK over its in-memory
// transport; the others are new URL(uri).toString() in Node 20, the reading the server looks up.
var whatwgReadings = []struct{ uri, reads string }{
	{" file:///hr/pay.txt", "file:///hr/pay.txt"},
	{"file:///h\tr/pay.txt", "file:///hr/pay.txt"},
	{"file:///hr/pay.txt\n", "file:///hr/pay.txt"},
	{"file:/hr/pay.txt", "file:///hr/pay.txt"},
	{"file:hr/pay.txt", "file:///hr/pay.txt"},
	{"file://localhost/hr/pay.txt", "file:///hr/pay.txt"},
	{"log://au\tdit", "log://audit"},
	{"\x01log://audit", "log://audit"},
	{"https://example.com", "https://example.com/"},
	{"https://example.com:443/", "https://example.com/"},
	{"https:example.com", "https://example.com/"},
	{"log://audit:", "log://audit"},
	{"log://@audit", "log://audit"},
	{"log://:@audit", "log://audit"},
	{"https://example.com:/", "https://example.com/"},
	{"https://example.com:0443/", "https://example.com/"},
	{"https://ex\u00e4mple.com/", "https://xn--exmple-cua.com/"},
	{"http://0x7f.1/", "http://127.0.0.1/"},
	{"https:///example.com/a", "https://example.com/a"},
	// A special scheme's host is percent-decoded, then IDNA-mapped; an empty file path is '/';
	// an IPv6 host is written in its shortest form, whatever the scheme.
	{"https://ex%c3%a4mple.com/x", "https://xn--exmple-cua.com/x"},
	{"https://a%2cb.com/", "https://a,b.com/"},
	{"file://", "file:///"},
	{"file://?/x", "file:///?/x"},
	{"file://#/x", "file:///"},
	{"https://[0::1]/a", "https://[::1]/a"},
	{"https://[::ffff:127.0.0.1]/a", "https://[::ffff:7f00:1]/a"},
	{"log://[0:0::1]/a", "log://[::1]/a"},
	{"https://example.com?x", "https://example.com/?x"},
	{"file:///hr/my pay.txt", "file:///hr/my%20pay.txt"},
	{"file:///hr/\u00e9.txt", "file:///hr/%C3%A9.txt"},
	{"file:///hr/{pay}.txt", "file:///hr/%7Bpay%7D.txt"},
	// Each part has its own set: an opaque path encodes only what is not ASCII, a query and a
	// fragment fewer characters than a path.
	{"note:Shopping list \u00e9", "note:Shopping list %C3%A9"},
	{"https://example.com/a?\u00e9`{}", "https://example.com/a?%C3%A9`{}"},
	{"https://example.com/a#\u00e9{'", "https://example.com/a#%C3%A9{'"},
	{"log://x/a?\u00e9'", "log://x/a?%C3%A9'"},
	{"https://example.com/a?\u00e9'", "https://example.com/a?%C3%A9%27"},
	{"log://x/a b\u00e9{", "log://x/a%20b%C3%A9%7B"},
	{"log://x/a\u0080", "log://x/a%C2%80"},
	{"log://x/a~{", "log://x/a~%7B"},
	// A Go worker reads the path url.Parse decodes: a rule written as the worker lists the
	// URI, unencoded, names the resource the encoded one reads.
	{"file:///hr/my%20pay.txt", "file:///hr/my pay.txt"},
	{"file:///hr/%C3%A9.txt", "file:///hr/\u00e9.txt"},
}

// TestResourceRuleReadsWhatAWHATWGWorkerReads: a URI a WHATWG reader takes for a resource a rule
// names is refused for a token without the rule's scope, before (URIRefusal) or by the rule.
func TestResourceRuleReadsWhatAWHATWGWorkerReads(t *testing.T) {
	for _, c := range whatwgReadings {
		for _, rule := range []Rule{{Name: "by-uri", URIs: []string{c.reads}, Scope: "x:read"},
			{Name: "by-prefix", Allow: `!uri.startsWith(` + strconv.Quote(c.reads) + `) || "x:read" in scopes`}} {
			p := mustNew(t, Config{ExtraScopes: []string{"x:read"}, ResourceRules: []Rule{rule}})
			if why := p.URIRefusal(c.uri); why != "" {
				continue
			}
			a := p.DecideToken(Token{Scopes: []string{"mcp:use", "mcp:write"}})
			if v, _ := p.ExplainKind(KindResource, a, c.uri, nil); v == Allowed {
				t.Errorf("rule %s on %q: %q, which a WHATWG reader reads as %q, is allowed without x:read", rule.Name, c.reads, c.uri, c.reads)
			}
		}
	}
}

// TestResourceRuleReadsWhatATemplateWorkerReads reads URIs as a TypeScript SDK (1.32.2) file
// worker does that registers the template file:///{+path} and joins its variable to its root:
// the SDK's UriTemplate.match gives {+path} everything after file:///, the query and the
// fragment too ("docs?/../hr/pay.txt"), and path.join resolves it, decoded
// (decodeURIComponent) or not. Node 20 read each of these as /hr/pay.txt. A URI such a worker
// reads under /hr/ is refused for a token without hr:read, before or by the rules.
func TestResourceRuleReadsWhatATemplateWorkerReads(t *testing.T) {
	policies := map[string]*Policy{
		"uris glob": mustNew(t, Config{ExtraScopes: []string{"hr:read"},
			ResourceRules: []Rule{{Name: "hr-files", URIs: []string{"file:///hr/*"}, Scope: "hr:read"}}}),
		"startsWith": mustNew(t, Config{ExtraScopes: []string{"hr:read"},
			ResourceRules: []Rule{{Name: "hr-files", Allow: `!uri.startsWith("file:///hr/") || "hr:read" in scopes`}}}),
	}
	for _, uri := range []string{
		"file:///docs?/../hr/pay.txt", "file:///docs#/../hr/pay.txt", "file:///docs?/./../hr/pay.txt",
		"file:///docs?%2F..%2Fhr%2Fpay.txt", "file:///docs?/%2E%2E/hr/pay.txt", "file:///docs#%2F..%2Fhr%2Fpay.txt",
		"file:///docs?x/..", "file:///docs?/../hr/",
	} {
		v := strings.TrimPrefix(uri, "file:///")
		decoded, err := url.PathUnescape(v)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range policies {
			if p.URIRefusal(uri) != "" {
				continue
			}
			a := p.DecideToken(Token{Scopes: []string{"mcp:use", "mcp:write"}})
			for _, read := range []string{path.Join("/", v), path.Join("/", decoded)} {
				if !strings.HasPrefix(read, "/hr/") {
					continue
				}
				if verdict, _ := p.ExplainKind(KindResource, a, uri, nil); verdict == Allowed {
					t.Errorf("%s: %q reaches the worker, which reads %s, without hr:read", name, uri, read)
				}
			}
		}
	}
}

// TestResourceRuleReadsWhatAPythonWorkerReads: Python's urllib.parse.urlparse reads the
// parameters of a web URI's last segment apart from its path (urlparse("https://x/a;b").path
// is "/a"), so a rule on https://x/a is decided on that reading too. Python 3 read each of
// these as the resource named.
func TestResourceRuleReadsWhatAPythonWorkerReads(t *testing.T) {
	for _, c := range []struct{ uri, reads string }{
		{"https://example.com/a;b", "https://example.com/a"},
		{"https://example.com/hr/pay.txt;x?y#z", "https://example.com/hr/pay.txt"},
		{"sftp://host/hr/pay;type=a", "sftp://host/hr/pay"},
		{"https://example.com/a/;b", "https://example.com/a/"},
	} {
		p := mustNew(t, Config{ExtraScopes: []string{"x:read"}, ResourceRules: []Rule{{Name: "by-uri", URIs: []string{c.reads}, Scope: "x:read"}}})
		if p.URIRefusal(c.uri) != "" {
			continue
		}
		a := p.DecideToken(Token{Scopes: []string{"mcp:use", "mcp:write"}})
		if v, _ := p.ExplainKind(KindResource, a, c.uri, nil); v == Allowed {
			t.Errorf("%q, which urlparse reads as %q, is allowed without x:read", c.uri, c.reads)
		}
	}
}

// TestURIRefusalIsShort: the reason, which the audit line's decided_by and the error message
// carry, quotes no unbounded part of the URI a client sent.
func TestURIRefusalIsShort(t *testing.T) {
	for _, uri := range []string{"log://audit:0" + strings.Repeat("9", 10000), "log://audit:0" + strings.Repeat("x", 10000) + "/a"} {
		if why := uriRefusal(uri); why == "" || len(why) > 100 {
			t.Errorf("uriRefusal of a %d-byte URI: %d bytes: %.80q", len(uri), len(why), why)
		}
	}
}
