package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rev9: gemgate dev --tls reuses whatever CA it finds in certs/ of the working directory and
// prints it as the CA the user's clients should trust. It checks neither that the folder and
// the key are this user's alone (as the issuer's key in .dev-issuer/ is, through
// internal/private) nor that the CA still carries the loopback-only name constraints the docs
// promise ("trusting it cannot make a client trust a certificate for any other site"). Where
// certs/ sits in a folder another account may write (a checkout in /tmp, which nobody, the
// account dev's own workers now run as, may write), that account plants an unconstrained CA
// whose key it keeps, and the user is told to trust it.
func TestDevCertificateRefusesAPlantedCA_rev9(t *testing.T) {
	plantUnconstrainedCA := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: "planted CA, no name constraints"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(devCALifetime),
			KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		p := devCertPaths(dir)
		if err := writePair(p.CA, p.CAKey, der, key); err != nil {
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
