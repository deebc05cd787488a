package sessions

import (
	"sync"
	"time"
)

// Reap runs the reaper: the gateway's look at its sessions (pass) every tick, on a goroutine
// of its own. The look reads each session's State, asks Lifetime.Verdict, and ends the
// session or sends its probe. stop ends the ticker and waits for a pass under way; it may be
// called more than once.
func Reap(tick time.Duration, pass func(now time.Time)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				pass(now)
			}
		}
	}()
	return sync.OnceFunc(func() { close(quit); <-done })
}
