package main

import (
	"crypto/tls"
	"net/url"
	"testing"
)

// gemgate dev --tls speaks TLS 1.2 or later, and keeps to it when GODEBUG=tls10server=1
// would let Go's servers speak TLS 1.0 and 1.1 again.
func TestDevTLSRefusesVersionsBelow12(t *testing.T) {
	t.Chdir(t.TempDir()) // dev --tls keeps its certificates in certs/ of the working directory
	t.Setenv("GODEBUG", "tls10server=1")
	info := runDev(t, "--tls", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--metrics-listen", "off")
	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13} {
		c, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, MinVersion: v, MaxVersion: v})
		if err == nil {
			c.Close()
		}
		if below := v < tls.VersionTLS12; below != (err != nil) {
			t.Errorf("%s: handshake error %v", tls.VersionName(v), err)
		}
	}
}
