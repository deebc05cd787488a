package auth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The forwarding headers are looked up in the header map as net/http stores them, in
// canonical form: a name spelled otherwise would never be found.
func TestForwardingHeadersAreCanonical(t *testing.T) {
	for _, name := range forwardingHeaders {
		if http.CanonicalHeaderKey(name) != name {
			t.Errorf("%q is not canonical (%q): a request carrying it would pass", name, http.CanonicalHeaderKey(name))
		}
	}
}

func TestLocalUserServesOnlyTheLocalUsersOwnRequests(t *testing.T) {
	// Each request comes on a loopback connection of this test's own account, as a local
	// client's does (LocalConnContext); one whose connection is unknown is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	own := LocalConnContext(context.Background(), conn)
	served := 0
	h := LocalUser(Principal{User: "me"}, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := PrincipalFrom(r.Context()); !ok || p.User != "me" {
			t.Errorf("principal %+v, %v", p, ok)
		}
		served++
	}))
	for _, tc := range []struct {
		host   string
		header string
		want   int
	}{
		{"localhost:8080", "", 200}, {"LOCALHOST", "", 200}, {"127.0.0.1:9", "", 200},
		{"127.0.0.2", "", 200}, {"[::1]:8080", "", 200}, {"[::1]", "", 200},
		{"example.com", "", 403}, {"localhost.example.com:8080", "", 403}, {"localhoſt", "", 403},
		{"localhost.", "", 403}, {"", "", 403}, {"[::1", "", 403}, {"10.0.0.1:80", "", 403},
		{"localhost:8080", "X-Forwarded-For", 403}, {"localhost:8080", "Forwarded", 403},
		{"localhost:8080", "Via", 403}, {"localhost:8080", "X-Real-Ip", 403},
		{"localhost:8080", "X-Forwarded-Host", 403}, {"localhost:8080", "Cf-Connecting-Ip", 403},
	} {
		r := httptest.NewRequestWithContext(own, http.MethodPost, "/mcp", nil)
		r.Host = tc.host
		if tc.header != "" {
			r.Header.Set(tc.header, "")
		}
		before := served
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.want || (served > before) != (tc.want == 200) {
			t.Errorf("Host %q with %q: %d (served %v), want %d", tc.host, tc.header, rec.Code, served > before, tc.want)
		}
	}
	rec, unknown := httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil) // no connection known
	unknown.Host = "localhost"
	h.ServeHTTP(rec, unknown)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "could not be found") {
		t.Errorf("a request whose connection is unknown: %d %s, want 403", rec.Code, rec.Body)
	}
}
