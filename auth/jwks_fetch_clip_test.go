package auth

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// 50931e8/fa4d2f0 clip what a failed discovery quotes of the issuer's answer, so that the
// warning logged on every key refresh is never the issuer's choice of size. The JWKS fetch
// itself still quotes two things of the issuer's choosing whole: the status line of a non-200
// answer (resp.Status, up to the transport's 10 MiB header limit) and, through
// GuardRedirects, the Location of a refused redirect (req.URL.Redacted()).
func TestJWKSFetchErrorIsClipped(t *testing.T) {
	long := strings.Repeat("a", 400<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://keys.example/"+long, http.StatusFound)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		bw := bufio.NewWriter(conn)
		bw.WriteString("HTTP/1.1 500 " + long + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		bw.Flush()
		_ = buf
	}))
	defer srv.Close()
	s := newRemoteKeySet(Config{Issuer: srv.URL, HTTPClient: GuardRedirects(srv.Client(), srv.URL, false)}, time.Now)
	for _, path := range []string{"/status", "/redirect"} {
		_, err := s.fetch(context.Background(), srv.URL+path)
		if err == nil {
			t.Fatalf("%s: the fetch worked", path)
		}
		if len(err.Error()) > 1024 {
			t.Errorf("JWKS fetch of %s: an error of %d bytes (logged on every refresh), want one under 1 KiB", path, len(err.Error()))
		}
	}
}
