package sessions

import (
	"sync"
	"time"
)

// Reap runs pass every tick on a goroutine of its own. stop ends it and waits for a pass
// under way; it may be called more than once.
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
