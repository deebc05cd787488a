//go:build linux

package worker

import (
	"log/slog"
	"os"
	"time"
)

// CredentialFDEnv names the variable that tells a worker on which inherited descriptor its
// credential waits: read it to its end once, close it, and keep the credential in memory only.
const CredentialFDEnv = "GEMGATE_CREDENTIAL_FD"

// handOver writes the credential into the pipe the worker inherited, then closes it so the
// worker reads to the end. A write that waits on the worker gives up after timeout.
func handOver(w *os.File, cred []byte, timeout time.Duration, log *slog.Logger) {
	defer w.Close()
	_ = w.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := w.Write(cred); err != nil {
		// The worker exited or never read it; the error names no part of the credential.
		log.Warn("could not hand the credential to the worker", "error", err)
	}
}

// handOverLine writes the credential line first on the worker's stdin, in the turn Start
// reserved for it, never traced or logged, then passes the turn on.
func (p *Process) handOverLine(line []byte) {
	if err := p.writeOut(line); err != nil {
		p.log.Warn("could not hand the credential to the worker on its stdin", "error", err)
	}
	clear(line) // the copy is gemgate's own: nothing keeps it after the write
	p.passTurn()
}
