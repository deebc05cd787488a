//go:build linux

package worker

// AfterDone runs f once the worker is done (Done closed, pending calls failed), on the
// goroutine that waited for its exit, or at once on its own if it is done already: no
// goroutine parked on Done (docs/PERFORMANCE.md). f must not wait for what the end waits for.
func (p *Process) AfterDone(f func()) {
	p.mu.Lock()
	if !p.afterDoneRan {
		p.afterDone = append(p.afterDone, f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	go f()
}

// runAfterDone runs what AfterDone registered; wait calls it once done is closed.
func (p *Process) runAfterDone() {
	p.mu.Lock()
	fs := p.afterDone
	p.afterDone, p.afterDoneRan = nil, true
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
