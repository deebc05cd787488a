//go:build linux

package worker

import (
	"log/slog"
	"os"
	"time"
)

// CredentialFDEnv names the environment variable that tells a worker on which inherited file
// descriptor its credential waits. The contract: read the descriptor to its end once, close
// it, and keep the credential in memory only; the variable holds only a number.
const CredentialFDEnv = "GEMGATE_CREDENTIAL_FD"

// handOver writes the credential into the pipe whose read end the worker inherited, then
// closes it so the worker reads to the end. A credential that fits the pipe's buffer (64 KiB
// by default) is written at once; a larger one waits for the worker to read, for at most
// timeout, so a worker that never reads costs one goroutine for a bounded time.
func handOver(w *os.File, cred []byte, timeout time.Duration, log *slog.Logger) {
	defer w.Close()
	_ = w.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := w.Write(cred); err != nil {
		// The worker exited or never read it; the error names no part of the credential.
		log.Warn("could not hand the credential to the worker", "error", err)
	}
}

// handOverLine writes the credential line first on the worker's stdin, holding the turn to
// write that Start gave it, and then passes the turn to the callers waiting behind it. The line
// goes through writeOut alone: it is never traced, and a write that fails is logged without
// it. A worker that does not read it within WriteTimeout is hung, as for any other line.
func (p *Process) handOverLine(line []byte) {
	if err := p.writeOut(line); err != nil {
		p.log.Warn("could not hand the credential to the worker on its stdin", "error", err)
	}
	clear(line) // the copy is gemgate's own: nothing keeps it after the write
	p.passTurn()
}
