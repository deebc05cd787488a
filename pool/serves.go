package pool

// Serves reports whether the worker that would serve id runs here or is starting: the user's
// sessionless worker when sessionless is true (Attach.Sessionless), the one legacy sessions
// use otherwise. A draining gateway still takes the requests of such a user (their worker
// and its state are here) and refuses, with a retryable 503, those that would make it start a
// worker it is about to stop.
func (p *Pool) Serves(id Identity, sessionless bool) bool {
	key := p.KeyFor(id)
	key.Sessionless = sessionless && !p.PerSession()
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
