package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gemgate/gemgate/internal/private"
)

// devCerts are the files of `gemgate dev --tls`, in the mkcert pattern: a development CA that
// clients are told to trust, and a loopback server certificate it signs.
type devCerts struct {
	CA, CAKey, Cert, Key string
}

// devCertsDir is where dev --tls keeps them: certs/ in the working directory.
const devCertsDir = "certs"

func devCertPaths(dir string) devCerts {
	return devCerts{
		CA:    filepath.Join(dir, "dev-ca.pem"),
		CAKey: filepath.Join(dir, "dev-ca-key.pem"),
		Cert:  filepath.Join(dir, "dev-cert.pem"),
		Key:   filepath.Join(dir, "dev-key.pem"),
	}
}

// devCertificate makes sure dir holds a development CA and a loopback certificate it signed,
// reusing what is there while valid, and returns the paths. Keys are written 0600. The CA may
// only sign loopback names (X.509 name constraints), so trusting it cannot vouch for any
// other site even if its key leaks.
//
// Whoever can change the CA makes the user's clients trust what they like, so the folder and
// the path to it must be this user's alone (internal/private), and a CA is reused only with
// exactly the loopback constraints gemgate gives its own.
func devCertificate(dir string) (devCerts, error) {
	p := devCertPaths(dir)
	if err := private.MkdirAll(dir, 0o755); err != nil {
		return p, fmt.Errorf("certificate folder %s: %w; run gemgate dev --tls from a folder of your own", dir, err)
	}
	for _, f := range []string{dir, p.CA, p.CAKey, p.Cert, p.Key} {
		if err := private.Owned(f); err != nil {
			return p, fmt.Errorf("certificate folder: %w; delete %s to start afresh", err, dir)
		}
	}
	ca, caKey, err := loadPair(p.CA, p.CAKey, 30*24*time.Hour)
	if err == nil && !loopbackOnly(ca) {
		return p, fmt.Errorf("%s is not gemgate's development CA: it may vouch for more than localhost, 127.0.0.0/8 and ::1; delete %s to start afresh", p.CA, dir)
	}
	if err != nil {
		if ca, caKey, err = newDevCA(p); err != nil {
			return p, err
		}
	}
	if leaf, _, err := loadPair(p.Cert, p.Key, 24*time.Hour); err == nil && leaf.CheckSignatureFrom(ca) == nil {
		return p, nil
	}
	return p, newDevLeaf(p, ca, caKey)
}

// loadPair reads a certificate and its ECDSA key, if the certificate is still valid for at
// least margin.
func loadPair(certFile, keyFile string, margin time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile) // checks that the key matches
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, errors.New("not an ECDSA key")
	}
	if time.Now().Add(margin).After(pair.Leaf.NotAfter) {
		return nil, nil, errors.New("expires soon")
	}
	return pair.Leaf, key, nil
}

// devCALoopback are the only names gemgate's development CA may vouch for.
var devCALoopback = []*net.IPNet{
	{IP: net.IPv4(127, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)},
	{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)},
}

// loopbackOnly tells whether ca carries exactly the name constraints gemgate gives its
// development CA, marked critical, and may sign no other CA.
func loopbackOnly(ca *x509.Certificate) bool {
	same := func(a, b []*net.IPNet) bool {
		return slices.EqualFunc(a, b, func(x, y *net.IPNet) bool { return x.String() == y.String() })
	}
	return ca.PermittedDNSDomainsCritical && ca.MaxPathLenZero &&
		slices.Equal(ca.PermittedDNSDomains, []string{"localhost"}) && same(ca.PermittedIPRanges, devCALoopback) &&
		len(ca.PermittedEmailAddresses) == 0 && len(ca.PermittedURIDomains) == 0
}

func newDevCA(p devCerts) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	who := "gemgate dev CA"
	if host, err := os.Hostname(); err == nil {
		who += " " + osUser() + "@" + host
	}
	return issue(p.CA, p.CAKey, &x509.Certificate{
		Subject:                     pkix.Name{CommonName: who, Organization: []string{"gemgate development CA"}},
		NotAfter:                    time.Now().Add(5 * 365 * 24 * time.Hour),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         []string{"localhost"},
		PermittedIPRanges:           devCALoopback,
	}, nil, nil)
}

func newDevLeaf(p devCerts, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	_, _, err := issue(p.Cert, p.Key, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "gemgate dev (loopback)"},
		NotAfter:    time.Now().Add(90 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}, ca, caKey)
	return err
}

// issue makes a fresh P-256 key and a certificate from tmpl, signed by parent, or by itself
// when parent is nil, and writes the key first (0600), then the certificate, each through a
// temporary file, so a reader never sees a certificate without its key. x509 draws the random
// serial number.
func issue(certFile, keyFile string, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err == nil {
		err = private.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	}
	if err == nil {
		err = private.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	}
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}
