//go:build linux

package worker

// AfterDone runs f once the worker is done (Done closed, pending calls failed), on the
// goroutine that waited for its exit, or at once on its own if it is done already: no
// goroutine parked on Done (docs/PERFORMANCE.md). f must not wait for what the end waits for.
func (p *Process) AfterDone(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		go f()
	default:
		p.afterDone = append(p.afterDone, f)
	}
}

// runAfterDone runs what AfterDone registered; wait calls it once done is closed, after
// which AfterDone registers no more.
func (p *Process) runAfterDone() {
	p.mu.Lock()
	fs := p.afterDone
	p.afterDone = nil
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
