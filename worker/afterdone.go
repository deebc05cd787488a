//go:build linux

package worker

// AfterDone arranges for f to run once the worker is done (Done closed, pending calls failed),
// on the goroutine that waited for the worker's exit, which has nothing left to do then. A
// caller that would otherwise keep a goroutine of its own parked on Done for the worker's
// whole life (a few kilobytes of stack per idle session) registers here instead. Registered
// after the end, f runs at once on a goroutine of its own. f must not wait for anything the
// worker's end itself waits for; it runs once.
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
