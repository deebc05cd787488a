package pool

import (
	"sync"

	"github.com/gemgate/gemgate/worker"
)

// keptEnded is how many ended workers' secrets the message trace still redacts: a worker's
// last messages can be traced after it ended (a session's outbox, a stream replayed with
// Last-Event-ID), and a credential it echoed must not appear there either.
const keptEnded = 256

// traceSecrets are the workers whose secrets every line of the message trace is redacted of:
// a credential one worker echoes is traced on its way out of the worker ("from_worker"), then
// again in whatever carries the same bytes on (the client's answer, an SSE event, a replay),
// and each of those lines must be redacted as the first was. It is kept only while the trace
// is on (Options.Trace): redacting costs a scan per secret per line.
type traceSecrets struct {
	mu    sync.Mutex
	live  map[*worker.Process]struct{}
	ended []*worker.Process // the most recently ended, oldest first, at most keptEnded
}

// add counts proc's secrets from its start until keptEnded workers have ended after it.
func (t *traceSecrets) add(proc *worker.Process) {
	t.mu.Lock()
	if t.live == nil {
		t.live = map[*worker.Process]struct{}{}
	}
	t.live[proc] = struct{}{}
	t.mu.Unlock()
	proc.AfterDone(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.live, proc)
		if len(t.ended) == keptEnded {
			t.ended[0] = nil
			t.ended = t.ended[1:]
		}
		t.ended = append(t.ended, proc)
	})
}

// redact is b with every secret of the workers counted taken out (worker.Process.Redacted).
func (t *traceSecrets) redact(b []byte) []byte {
	t.mu.Lock()
	procs := make([]*worker.Process, 0, len(t.live)+len(t.ended))
	for p := range t.live {
		procs = append(procs, p)
	}
	procs = append(procs, t.ended...)
	t.mu.Unlock()
	for _, p := range procs {
		b = p.Redacted(b)
	}
	return b
}

// RedactSecrets is b with the secrets of every worker the pool runs, or ended lately, taken
// out: the credential each was handed and the other secrets its launch named, in every
// spelling worker.Process.Redacted finds. The message trace runs each of its lines through
// it. Without Options.Trace the pool keeps no list, and b is returned as it is.
func (p *Pool) RedactSecrets(b []byte) []byte {
	if p.opts.Trace == nil {
		return b
	}
	return p.traced.redact(b)
}
