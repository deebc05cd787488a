package devissuer

import (
	"bytes"
	"encoding/hex"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
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
		{"all at once", Options{Clients: []Client{{Secret: "s"}}},
			[]string{"audience is required", "has no ID"}},
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

// Close frees the issuer's port at once, even when its server goroutine had not started to
// serve yet: a restart on the same address (gemgate dev keeps the issuer's port) must work.
func TestCloseFreesThePort(t *testing.T) {
	for range 50 {
		iss, err := Start(Options{Audience: testAudience})
		if err != nil {
			t.Fatal(err)
		}
		addr := iss.listener.Addr().String()
		if err := iss.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listening again on %s right after Close: %v", addr, err)
		}
		ln.Close()
	}
}

// lockedBuffer is written by the server's goroutines and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLogsNoSecrets(t *testing.T) {
	var logs lockedBuffer
	i := startIssuer(t, Options{
		Clients:           append(DefaultClients(), gateway),
		ExchangeAudiences: []string{"gemstone"},
		Logger:            slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	alice := client(t, i, "alice")
	bad := alice
	bad.Secret = "wrong-secret-value"

	cc := post(t, i, url.Values{"grant_type": {"client_credentials"}}, &alice)
	subject := cc.body["access_token"].(string)
	ex := post(t, i, exchangeForm(subject), &gateway)
	exchanged := ex.body["access_token"].(string)
	post(t, i, url.Values{"grant_type": {"client_credentials"}}, &bad)
	post(t, i, exchangeForm(subject+"x"), &gateway)

	out := logs.String()
	if !strings.Contains(out, "token issued") || !strings.Contains(out, "token refused") {
		t.Fatalf("expected issue and refusal lines, got:\n%s", out)
	}
	for name, secret := range map[string]string{
		"client secret": alice.Secret, "wrong secret": bad.Secret, "gateway secret": gateway.Secret,
		"subject token": subject, "exchanged token": exchanged,
	} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains the %s", name)
		}
	}
}

func TestURLShape(t *testing.T) {
	i := startIssuer(t, Options{})
	if !strings.HasPrefix(i.URL(), "http://127.0.0.1:") || strings.HasSuffix(i.URL(), "/") {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT", i.URL())
	}
}

// TestServerBoundsHeaderReads: the token endpoint listens on a real port, so a client that
// sends its headers a byte at a time must not hold a connection for ever.
func TestServerBoundsHeaderReads(t *testing.T) {
	i := startIssuer(t, Options{})
	if d := i.srv.ReadHeaderTimeout; d <= 0 || d > time.Minute {
		t.Errorf("ReadHeaderTimeout = %v, want a bound of at most a minute", d)
	}
}

// TestServeFailureIsLogged: when the server stops for any reason other than Close, the
// issuer says so instead of going quiet with its port still advertised.
func TestServeFailureIsLogged(t *testing.T) {
	w := &waitWriter{want: "devissuer: serve", found: make(chan struct{})}
	i := startIssuer(t, Options{Logger: slog.New(slog.NewTextHandler(w, nil))})
	if err := i.listener.Close(); err != nil { // closed under the server: Serve fails
		t.Fatal(err)
	}
	select {
	case <-w.found:
	case <-time.After(10 * time.Second):
		t.Fatal("no serve error logged within 10s")
	}
}

// waitWriter closes found once a write contains want.
type waitWriter struct {
	want  string
	once  sync.Once
	found chan struct{}
}

func (w *waitWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.found) })
	}
	return len(p), nil
}

func TestMint(t *testing.T) {
	i := startIssuer(t, Options{})
	tok, err := i.Mint("carol", []string{"mcp:use"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	claims := verifyWithJWKS(t, i, tok, testAudience)
	if claims["sub"] != "carol" || claims["preferred_username"] != "carol" || claims["scope"] != "mcp:use" {
		t.Errorf("claims = %v", claims)
	}
	if raw := payload(t, tok); raw["exp"].(float64)-raw["iat"].(float64) != 3600 {
		t.Errorf("lifetime %v s, want an hour, for ttl 0", raw["exp"].(float64)-raw["iat"].(float64))
	}

	expired, err := i.Mint("carol", nil, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Fetch(t.Context(), i.URL()+"/jwks")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jwt.ParseString(expired, jwt.WithKeySet(set), jwt.WithValidate(true)); err == nil {
		t.Error("a token minted with negative ttl validates")
	}

	other := startIssuer(t, Options{})
	foreign, err := other.Mint("carol", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jwt.ParseString(foreign, jwt.WithKeySet(set)); err == nil {
		t.Error("another issuer's token verifies against this issuer's JWKS")
	}
	if _, err := i.Mint("", nil, 0); err == nil {
		t.Error("Mint with an empty user succeeded")
	}
}
