package sessions

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestReap: a pass every tick, at the tick's time; none after stop, which may be called
// again.
func TestReap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var passes atomic.Int64
		var last atomic.Int64
		stop := Reap(500*time.Millisecond, func(now time.Time) {
			passes.Add(1)
			last.Store(int64(now.Sub(start)))
		})
		time.Sleep(1600 * time.Millisecond)
		synctest.Wait()
		if n, at := passes.Load(), time.Duration(last.Load()); n != 3 || at != 1500*time.Millisecond {
			t.Errorf("%d passes, the last at %v; want 3, the last at 1.5s", n, at)
		}
		stop()
		stop()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := passes.Load(); n != 3 {
			t.Errorf("%d passes after stop, want 3", n)
		}
	})
}

// TestReapAtTheDefaultTick: the reaper of a default Lifetime looks twice a second, so a
// session is ended within half a second of its deadline.
func TestReapAtTheDefaultTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var passes atomic.Int64
		stop := Reap(Lifetime{}.WithDefaults().Tick, func(time.Time) { passes.Add(1) })
		defer stop()
		time.Sleep(1100 * time.Millisecond)
		synctest.Wait()
		if n := passes.Load(); n != 2 {
			t.Errorf("%d passes in 1.1s, want 2 (one every 500ms)", n)
		}
	})
}
