package devissuer

import (
	"encoding/hex"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "[::]:0", "example.invalid:0"} {
		t.Run(addr, func(t *testing.T) {
			i, err := Start(Options{Addr: addr, Audience: testAudience})
			if err == nil {
				i.Close()
				t.Fatalf("Start(%q) succeeded, want refusal", addr)
			}
			if addr != "example.invalid:0" && !strings.Contains(err.Error(), "loopback") {
				t.Errorf("error %q does not say why", err)
			}
		})
	}
}

func TestStartAcceptsLocalhost(t *testing.T) {
	i := startIssuer(t, Options{Addr: "localhost:0"})
	u, err := url.Parse(i.URL())
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil || !ip.IsLoopback() {
		t.Errorf("URL() = %q, want a loopback IP literal", i.URL())
	}
}

func TestStartValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		{"no audience", Options{}, []string{"audience is required"}},
		{"bad clients", Options{Audience: testAudience, Clients: []Client{
			{ID: "a", Secret: "s", User: "u"}, {ID: "a", Secret: "s", User: "u"}, {ID: "b", User: "u"},
		}}, []string{`client "a" is listed twice`, `client "b" has no Secret`}},
		{"all at once", Options{TokenTTL: -1, Clients: []Client{{Secret: "s"}}},
			[]string{"audience is required", "TokenTTL", "has no ID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, err := Start(tt.o)
			if err == nil {
				i.Close()
				t.Fatal("Start succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDefaultClients(t *testing.T) {
	a, b := DefaultClients(), DefaultClients()
	if len(a) != 2 || a[0].ID != "alice" || a[0].User != "alice" || a[1].ID != "bob" || a[1].User != "bob" {
		t.Fatalf("DefaultClients() = %+v", a)
	}
	if strings.Join(a[0].Scopes, " ") != "mcp:use mcp:write" || strings.Join(a[1].Scopes, " ") != "mcp:use" {
		t.Errorf("scopes: alice %v, bob %v", a[0].Scopes, a[1].Scopes)
	}
	for n := range a {
		if a[n].Secret == b[n].Secret {
			t.Errorf("%s: the same secret twice", a[n].ID)
		}
		if _, err := hex.DecodeString(a[n].Secret); err != nil || len(a[n].Secret) < 32 {
			t.Errorf("%s: secret %d chars, not hex of 16+ bytes", a[n].ID, len(a[n].Secret))
		}
	}
}

func TestOptionsAreCopied(t *testing.T) {
	clients := []Client{{ID: "c", Secret: "s", User: "u", Scopes: []string{"mcp:use"}}}
	i := startIssuer(t, Options{Clients: clients})
	clients[0].Scopes[0] = "changed"
	got := i.Clients()
	got[0].Scopes[0] = "changed too"
	if s := i.Clients()[0].Scopes[0]; s != "mcp:use" {
		t.Errorf("issuer's client scope changed to %q", s)
	}
}
