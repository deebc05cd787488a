package pool

// Serves reports whether the worker that would serve id runs here or is starting. A draining
// gateway still takes the requests of such a user (their worker and its state are here) and
// refuses, with a retryable 503, those that would make it start a worker it is about to stop.
func (p *Pool) Serves(id Identity) bool {
	p.mu.Lock()
	s := p.slots[p.KeyFor(id)]
	p.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone && (s.w != nil || s.starting != nil)
}
