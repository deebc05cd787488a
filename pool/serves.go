package pool

// Serves reports whether the worker that would serve id (the sessionless one if sessionless)
// runs here or is starting. A draining gateway uses it to keep serving such users and to
// refuse, with a retryable 503, requests that would start a worker.
func (p *Pool) Serves(id Identity, sessionless bool) bool {
	key := p.keyFor(id, sessionless)
	p.mu.Lock()
	s := p.slots[key]
	p.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone && (s.w != nil || s.starting != nil)
}
