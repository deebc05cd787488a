package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"
)

// certFiles serves tls_cert and tls_key, and picks up a renewed pair (ACME, cert-manager)
// without a restart. A pair that does not load (a half-written renewal) is logged and the
// certificate in use stays until the next change.
type certFiles struct {
	certPath, keyPath string
	log               *slog.Logger

	cert  atomic.Pointer[tls.Certificate]
	check rate.Sometimes // how often at most a handshake looks at the files
	seen  [2]fileStamp   // of the files when last loaded or tried; touched only within check.Do
}

// fileStamp tells one version of a file from the next. The inode counts too: a renewal that
// moves a new file into place may keep the size and, within the clock's grain, the time.
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func newCertFiles(certPath, keyPath string, log *slog.Logger) (*certFiles, error) {
	cf := &certFiles{certPath: certPath, keyPath: keyPath, log: log, check: rate.Sometimes{Interval: time.Second}}
	cf.check.Do(func() { cf.seen = cf.stamps() }) // the first look: a handshake looks a second later
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	cf.cert.Store(&cert)
	return cf, nil
}

func (cf *certFiles) stamps() [2]fileStamp {
	var out [2]fileStamp
	for i, p := range []string{cf.certPath, cf.keyPath} {
		if fi, err := os.Stat(p); err == nil {
			out[i] = fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: fi.Sys().(*syscall.Stat_t).Ino}
		}
	}
	return out
}

// get is the tls.Config's GetCertificate.
func (cf *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cf.check.Do(func() {
		if st := cf.stamps(); st != cf.seen {
			cf.seen = st
			cf.reload()
		}
	})
	return cf.cert.Load(), nil
}

func (cf *certFiles) reload() {
	cert, err := tls.LoadX509KeyPair(cf.certPath, cf.keyPath)
	if err != nil {
		cf.log.Warn("tls_cert/tls_key changed but do not load; serving the certificate loaded before", "error", err)
		return
	}
	cf.cert.Store(&cert)
	attrs := []any{"cert", cf.certPath}
	if cert.Leaf != nil {
		attrs = append(attrs, "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339), "serial", fmt.Sprint(cert.Leaf.SerialNumber))
	}
	cf.log.Info("tls certificate reloaded", attrs...)
}
