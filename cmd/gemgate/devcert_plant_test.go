package main

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// gemgate dev --tls reuses the CA it finds in certs/ of the working directory and prints it as
// the CA the user's clients should trust. Where certs/ sits in a folder another account may
// write (a checkout in /tmp, which nobody may write), that account could plant a CA without
// the loopback-only name constraints, whose key it keeps. A CA is reused only from a folder
// and files this user's alone (internal/private, as for the issuer's key in .dev-issuer/),
// and only with exactly the constraints gemgate gives its own.
func TestDevCertificateRefusesAPlantedCA(t *testing.T) {
	plantUnconstrainedCA := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := devCertPaths(dir)
		if _, _, err := issue(p.CA, p.CAKey, &x509.Certificate{
			Subject:  pkix.Name{CommonName: "planted CA, no name constraints"},
			NotAfter: time.Now().Add(5 * 365 * 24 * time.Hour), KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a CA without the loopback name constraints", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "certs")
		plantUnconstrainedCA(t, dir)
		if _, err := devCertificate(dir); err == nil {
			ca, _, _ := loadPair(devCertPaths(dir).CA, devCertPaths(dir).CAKey, 0)
			t.Errorf("devCertificate reused a CA without name constraints (permitted DNS %q, IP ranges %v) as the one clients are told to trust", ca.PermittedDNSDomains, ca.PermittedIPRanges)
		}
	})
	t.Run("a certs folder and CA key of another account", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the folder to another account; CI runs as root")
		}
		dir := filepath.Join(t.TempDir(), "certs")
		if _, err := devCertificate(dir); err != nil { // a proper CA, made by dev
			t.Fatal(err)
		}
		p := devCertPaths(dir)
		for _, f := range []string{dir, p.CA, p.CAKey} {
			if err := os.Chown(f, 65534, 65534); err != nil { // then given away, or made by nobody first
				t.Fatal(err)
			}
		}
		if _, err := devCertificate(dir); err == nil {
			t.Errorf("devCertificate used %s and its CA key, uid 65534's, which that account may replace with a CA of its own", dir)
		}
	})
}
