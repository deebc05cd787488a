package sessions

import (
	"sync"
	"time"
)

// Reaper runs the gateway's look at its sessions (pass) every tick, on a goroutine of its
// own, until Stop: the look reads each session's State, asks Lifetime.Verdict, and ends the
// session or sends its probe.
type Reaper struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// StartReaper starts the ticker; tick is Lifetime.Tick.
func StartReaper(tick time.Duration, pass func(now time.Time)) *Reaper {
	r := &Reaper{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-r.quit:
				return
			case now := <-t.C:
				pass(now)
			}
		}
	}()
	return r
}

// Stop ends the ticker and waits for a pass under way; it may be called more than once.
func (r *Reaper) Stop() {
	r.once.Do(func() { close(r.quit) })
	<-r.done
}
