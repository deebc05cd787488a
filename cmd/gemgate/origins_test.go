package main

import (
	"strings"
	"testing"
)

// The Origin gate compares a request's Origin with each allowed_origins entry as written, and
// a browser sends an origin in one spelling: scheme and host in lower case, no default port,
// nothing after the port. An entry in another spelling allows no page at all, without a word
// (its page's calls get 403 origin not allowed): it is refused at start, with the spelling to
// write; an entry as browsers send it passes.
func TestAllowedOriginsAreWrittenAsBrowsersSendThem(t *testing.T) {
	for _, tc := range []struct{ origin, want string }{
		{"https://App.example.com", "https://app.example.com"},
		{"HTTPS://app.example.com", "https://app.example.com"},
		{"https://app.example.com:443", "https://app.example.com"},
		{"http://localhost:80", "http://localhost"},
		{"https://app.example.com/", "https://app.example.com"}, // copied from the address bar
		{"https://App.example.com:443/app", "https://app.example.com"},
		{"https://app.example.com?x=1", ""},
		{"https://app.example.com#top", ""},
		{"https://user@app.example.com", ""},
		{"https://app.example.com", "ok"},
		{"http://localhost:6274", "ok"},
		{"http://[::1]:6274", "ok"},
		{"*", "ok"},
	} {
		c := mustLoad(t, "--issuer", "https://id.example", "--allowed-origins", tc.origin)
		var problem string
		for _, e := range c.validate() {
			if strings.Contains(e.Error(), "allowed_origins") {
				problem = e.Error()
			}
		}
		switch {
		case tc.want == "ok" && problem != "":
			t.Errorf("%q refused: %s", tc.origin, problem)
		case tc.want != "ok" && problem == "":
			t.Errorf("%q accepted: no browser sends it", tc.origin)
		case tc.want != "ok" && tc.want != "" && !strings.Contains(problem, `"`+tc.want+`"`):
			t.Errorf("%q: %s; want it to name %q", tc.origin, problem, tc.want)
		}
	}
}
