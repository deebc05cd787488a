package worker

// Redacted is b without the secrets this worker was handed, as its log lines are written: an
// answer of the worker's that gemgate passes on (a refusal of initialize, which often quotes
// what a backend login was given) goes out as the log would show it. b itself when it holds
// none of them.
func (p *Process) Redacted(b []byte) []byte { return p.redact(b) }
