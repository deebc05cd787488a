package pool

import (
	"maps"
	"slices"
	"sync"

	"github.com/gemgate/gemgate/worker"
)

// keptEnded is how many ended workers' secrets the message trace still redacts: their last
// messages may be traced later (an outbox, a replay), and must not show a credential.
const keptEnded = 256

// traceSecrets are the workers whose secrets are redacted from every line of the message
// trace, since an echoed credential is traced again wherever its bytes are carried on. It
// is kept only while the trace is on (Options.Trace).
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
			t.ended = slices.Delete(t.ended, 0, 1)
		}
		t.ended = append(t.ended, proc)
	})
}

// redact is b with every secret of the workers counted taken out (worker.Process.Redacted).
func (t *traceSecrets) redact(b []byte) []byte {
	t.mu.Lock()
	procs := append(slices.Collect(maps.Keys(t.live)), t.ended...)
	t.mu.Unlock()
	for _, p := range procs {
		b = p.Redacted(b)
	}
	return b
}

// RedactSecrets is b without the secrets of every worker the pool runs or ended lately, in
// every spelling worker.Process.Redacted finds. It is for the message trace: without
// Options.Trace, b is returned as it is.
func (p *Pool) RedactSecrets(b []byte) []byte {
	if p.opts.Trace == nil {
		return b
	}
	return p.traced.redact(b)
}
