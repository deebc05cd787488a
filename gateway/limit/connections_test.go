package limit

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"
)

// selfSigned is a TLS server config for 127.0.0.1 and a client config that trusts it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}
}

// TestConnectionCap: with max connections open, the next one is answered 503 with
// Retry-After and Connection: close, in plain HTTP and in TLS; a closed connection frees its
// slot.
func TestConnectionCap(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "plain"
		if useTLS {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var serverTLS, clientTLS *tls.Config
			if useTLS {
				serverTLS, clientTLS = selfSigned(t)
			}
			const max = 2
			ln := Connections(raw, ConnectionCap{Max: max, TLS: serverTLS})
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
				TLSConfig: serverTLS}
			go func() {
				if useTLS {
					_ = srv.ServeTLS(ln, "", "")
				} else {
					_ = srv.Serve(ln)
				}
			}()
			t.Cleanup(func() { srv.Close() })

			dial := func(alpn ...string) net.Conn {
				t.Helper()
				c, err := net.Dial("tcp", raw.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if useTLS {
					cfg := clientTLS.Clone()
					if alpn != nil {
						cfg.NextProtos = alpn
					}
					tc := tls.Client(c, cfg)
					t.Cleanup(func() { tc.Close() })
					return tc
				}
				return c
			}
			get := func(c net.Conn) *http.Response {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, "http://"+raw.Addr().String()+"/", nil)
				if err := req.Write(c); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp
			}
			var held []net.Conn
			for range max {
				c := dial()
				if r := get(c); r.StatusCode != http.StatusOK { // served, and now held open
					t.Fatalf("a connection under the cap: status %d", r.StatusCode)
				}
				held = append(held, c)
			}
			if n := ln.(*cappedListener).Open(); n != max {
				t.Errorf("%d connections counted open, want %d", n, max)
			}
			// A client that would rather speak HTTP/2 is refused in HTTP/1.1, which it also offers.
			r := get(dial("h2", "http/1.1"))
			if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !r.Close {
				t.Errorf("over the cap: status %d, Retry-After %q, close %v; want 503, a Retry-After, close",
					r.StatusCode, r.Header.Get("Retry-After"), r.Close)
			}
			held[0].Close()
			eventually(t, 5*time.Second, "the closed connection's slot to be free", func() bool { return ln.(*cappedListener).Open() < max })
			if r := get(dial()); r.StatusCode != http.StatusOK {
				t.Errorf("after a connection closed: status %d, want 200", r.StatusCode)
			}
		})
	}
}

// TestConnectionCapBoundsRefusals: refusals being written are bounded too; connections past
// them are closed at once rather than queued, so a flood cannot hold descriptors through them.
func TestConnectionCapBoundsRefusals(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Connections(raw, ConnectionCap{Max: 1}).(*cappedListener)
	ln.refusalTimeout = time.Minute // refused clients that keep sending hold their slot
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			if _, err := ln.Accept(); err != nil {
				return
			}
		}
	}()
	const extra = 20
	var conns []net.Conn
	for range 1 + maxRefusing + extra {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	answered, closed := 0, 0
	for _, c := range conns[1:] {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		switch {
		case bytes.HasPrefix(b, []byte("HTTP/1.1 503 ")):
			answered++
		case len(b) == 0 && !isTimeout(err):
			closed++
		default:
			t.Errorf("refused connection: read %q, %v", b, err)
		}
	}
	if answered != maxRefusing || closed != extra {
		t.Errorf("%d answered 503 and %d closed at once, want %d and %d", answered, closed, maxRefusing, extra)
	}
	if n := ln.Open(); n != 1 {
		t.Errorf("%d connections counted open, want 1", n)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// eventually waits for cond, checking every 10ms, and fails the test after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnectionCapZeroIsNoCap: a cap of 0 (or less) lets every connection through; none is
// refused with 503.
func TestConnectionCapZeroIsNoCap(t *testing.T) {
	for _, max := range []int{0, -1} {
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })}
		go func() { _ = srv.Serve(Connections(raw, ConnectionCap{Max: max})) }()
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + raw.Addr().String() + "/")
		if err != nil {
			t.Fatalf("max %d: %v", max, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("max %d: status %d, want 200 (no cap)", max, resp.StatusCode)
		}
		srv.Close()
	}
}
