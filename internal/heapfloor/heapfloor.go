// Package heapfloor lets a small Go heap grow to a floor before the collector runs.
//
// The collector's default (GOGC=100) starts a cycle when the heap has grown by as much as
// was live after the last one, and never below 4 MiB. A gateway keeps little alive between
// requests (gemgate under load: about 2 MiB) but allocates a few KiB per request, so at a few
// thousand requests a second the collector ran a dozen times a second, and every cycle
// takes a P, turns on the write barrier and drafts allocating goroutines into marking. On a
// small machine that was a tenth of the gateway's CPU per call (docs/PERFORMANCE.md).
//
// Start raises GOGC while the live heap is small, so that the next cycle starts when the
// heap reaches the floor, and gives the percent back once what is live is large enough for
// the percent alone to reach it: a gateway holding thousands of sessions collects exactly as
// it would without it. After every cycle the percent is set again from what that cycle
// found live. The cost is memory: at most the floor, in garbage not yet collected.
//
// A percent that someone else sets while it runs (debug.SetGCPercent) is theirs: the tuner
// takes it as its new least percent, leaves the collector off if that is what they chose,
// and stop leaves their percent in place. Setting back the percent they found (the usual
// old := debug.SetGCPercent(-1); defer debug.SetGCPercent(old)) hands it back to the tuner.
//
// It must never import another gemgate package: any package may use it.
package heapfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Gateway is the floor gemgate serves with unless GOGC is set. Measured with bench/ on this
// project's 2-core machine, 32 sessions of one user: 16 MiB took the collector from about a
// dozen cycles a second to one or two, and the gateway's CPU per call down by about a tenth
// (docs/PERFORMANCE.md); 32 and 64 MiB did no better.
const Gateway = 16 << 20

// minimumHeap is the runtime's least heap goal at GOGC=100 (the goal scales with GOGC).
const minimumHeap = 4 << 20

var (
	mu      sync.Mutex
	running *tuner
	users   int
)

// Start keeps the heap goal at floor bytes or more until stop is called, with the
// percent the process had (GOGC, 100 by default) as the least it sets. Calls may nest (a
// test serving twice in one process): the first floor stands until the last stop. With the
// collector off (GOGC=off) it does nothing.
func Start(floor uint64) (stop func()) {
	mu.Lock()
	defer mu.Unlock()
	if running == nil {
		base := readPercent()
		if base <= 0 {
			return func() {}
		}
		running = &tuner{floor: floor, base: base, set: base, samples: []metrics.Sample{
			{Name: "/gc/heap/live:bytes"},
			{Name: "/gc/scan/stack:bytes"},
			{Name: "/gc/scan/globals:bytes"},
			{Name: "/gc/gogc:percent"},
		}}
		running.adjust()
		running.arm()
	}
	users++
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if users--; users == 0 {
				running.stop()
				running = nil
			}
		})
	}
}

// Floor is the floor in force, 0 when none is.
func Floor() uint64 {
	mu.Lock()
	defer mu.Unlock()
	if running == nil {
		return 0
	}
	return running.floor
}

type tuner struct {
	floor uint64

	mu      sync.Mutex // guards what follows; adjust runs on the runtime's cleanup goroutine
	base    int        // the least percent this sets: the process's, or one set since by someone else
	set     int        // the percent this set last; another in force was set by someone else
	lent    int        // while someone else's percent is in force, the one it replaced (0: none is)
	lentAt  int        // the least percent when it was replaced
	cycles  int        // adjustments made, for tests
	stopped bool
	samples []metrics.Sample
}

// sentinel is what each cycle finds unreachable. It is large enough not to share a tiny
// allocation block with other objects, which would keep it alive.
type sentinel struct{ _ [32]byte }

// arm allocates a sentinel whose cleanup, run after the cycle that finds it unreachable,
// adjusts the percent and arms the next one.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		if t.adjust() {
			t.arm()
		}
	}, t)
}

// adjust sets the percent for the next cycle from what the last one found live, and says
// whether the tuner still runs.
func (t *tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	t.cycles++
	metrics.Read(t.samples)
	live := t.samples[0].Value.Uint64()
	roots := live + t.samples[1].Value.Uint64() + t.samples[2].Value.Uint64()
	cur := int(t.samples[3].Value.Uint64())
	switch {
	case cur == t.set:
	case t.lent != 0 && cur == t.lent: // the percent it replaced set back: the tuner's again
		t.base, t.set, t.lent = t.lentAt, cur, 0
	default: // set by someone else since: their percent is the least from now on
		if t.lent == 0 {
			t.lent, t.lentAt = t.set, t.base
		}
		t.base, t.set = cur, cur
	}
	if t.base <= 0 { // the collector is off: leave it so, and watch for it to be turned on
		return true
	}
	if want := percentFor(t.floor, live, roots, t.base); want != cur {
		debug.SetGCPercent(want)
		t.set = want
	}
	return true
}

// stop gives back the least percent, unless someone else set the one in force.
func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if readPercent() == t.set {
		debug.SetGCPercent(t.base)
	}
}

// maxFloor bounds a floor, so that the arithmetic of percentFor cannot overflow.
const maxFloor = 1 << 50

// percentFor is the least percent, not below base, whose heap goal reaches floor. The
// runtime's goal is the larger of live + roots×percent/100 (roots: the live heap, stacks
// and globals it scans) and its minimum heap, 4 MiB×percent/100; whichever of the two
// reaches the floor first decides.
// The result is at most math.MaxInt32, the runtime's own bound (it keeps the percent in an
// int32, where a larger one would wrap, perhaps to a negative: the collector off).
func percentFor(floor, live, roots uint64, base int) int {
	floor = min(floor, maxFloor)
	if floor <= live || roots == 0 {
		return base
	}
	byGoal := (floor - live) * 100 / roots
	byMinimum := floor * 100 / minimumHeap
	p := min(byGoal, byMinimum, math.MaxInt32)
	if p <= uint64(base) {
		return base
	}
	return int(p)
}

// readPercent is the percent in force (-1 when the collector is off).
func readPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
