package main

import (
	"path/filepath"
	"slices"
	"testing"
)

// The development CA's key lives on in certs/ of the working directory after the
// `gemgate dev --tls` that made it. A later gemgate in the same folder that does not use it
// (no --tls, or --tls with --tls-cert/--tls-key of its own) hides it from sandboxed workers
// all the same: it is the CA the user's clients were told to trust.
func TestDevCAKeyIsHiddenWhenThisRunDoesNotUseIt(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	certs, err := devCertificate("certs") // an earlier `gemgate dev --tls` here
	if err != nil {
		t.Fatal(err)
	}
	caKey := filepath.Join(dir, certs.CAKey)
	other, err := devCertificate("elsewhere") // a certificate of the user's own
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"dev without --tls", nil},
		{"dev --tls with its own --tls-cert/--tls-key", []string{"--tls", "--tls-cert", other.Cert, "--tls-key", other.Key}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load("dev", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if err := devTLS(c, &devInfo{}); err != nil {
				t.Fatal(err)
			}
			if got := c.gatewaySecrets(""); !slices.Contains(got, caKey) {
				t.Errorf("gatewaySecrets = %q: the development CA's key %s, on disk in the working directory, is not hidden from sandboxed workers", got, caKey)
			}
		})
	}
}
