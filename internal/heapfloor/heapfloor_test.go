package heapfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name              string
		floor, live, root uint64
		base, want        int
	}{
		// 2 MiB live: the goal formula would allow 700, but the runtime's minimum heap,
		// 4 MiB×percent/100, reaches 16 MiB at 400 already.
		{"small heap: the minimum heap decides", 16 * mib, 2 * mib, 2 * mib, 100, 400},
		{"a larger floor, the same heap", 64 * mib, 2 * mib, 2 * mib, 100, 1600},
		// 6 MiB live, 6.5 MiB scanned: 6 + 6.5×p/100 = 16 at p = 153.
		{"medium heap: the goal formula decides", 16 * mib, 6 * mib, 6*mib + mib/2, 100, 153},
		{"half the floor live: the base reaches it", 16 * mib, 8 * mib, 8 * mib, 100, 100},
		{"more than the floor live", 16 * mib, 40 * mib, 41 * mib, 100, 100},
		{"a higher base is kept", 16 * mib, 2 * mib, 2 * mib, 500, 500},
		{"a base below what the floor needs is raised", 16 * mib, 2 * mib, 2 * mib, 50, 400},
		{"nothing scanned yet", 16 * mib, 0, 0, 100, 100},
		// The runtime keeps the percent in an int32: a larger one would wrap, perhaps to a
		// negative, which turns the collector off.
		{"a floor of 128 TiB stays within an int32", 1 << 47, 0, mib, 100, math.MaxInt32},
		{"a floor of 2^63 does not overflow", 1 << 63, 0, mib, 100, math.MaxInt32},
	} {
		if got := percentFor(c.floor, c.live, c.root, c.base); got != c.want {
			t.Errorf("%s: percentFor(%d MiB floor, %d live, %d roots, base %d) = %d, want %d",
				c.name, c.floor/mib, c.live, c.root, c.base, got, c.want)
		}
	}
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waitFor runs collections until cond holds: the tuner adjusts on the runtime's cleanup
// goroutine after a cycle, so a condition is met some cycles later, not at once.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s (percent %d, heap goal %d MiB)", what, readPercent(), heapGoal()>>20)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// The floor raises the heap goal of a small heap to itself, gives the percent back when the
// live heap alone reaches the floor, takes it again when the heap shrinks, and stop restores
// the percent the process had.
func TestFloorFollowsTheLiveHeap(t *testing.T) {
	base := readPercent()
	if base != 100 {
		t.Fatalf("this test expects the default percent, the process has %d (GOGC set?)", base)
	}
	const floor = 48 << 20
	stop := Start(floor)
	defer stop()
	if Floor() != floor {
		t.Fatalf("Floor() = %d, want %d", Floor(), floor)
	}
	waitFor(t, "the heap goal reaches the floor", func() bool { return heapGoal() >= floor*9/10 })
	if p := readPercent(); p <= base {
		t.Fatalf("percent %d with a small heap, want above %d", p, base)
	}

	// 40 MiB live: the percent alone puts the goal at about 80 MiB.
	live := make([][]byte, 40)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitFor(t, "the percent is given back with 40 MiB live", func() bool { return readPercent() == base })
	runtime.KeepAlive(live)
	live = nil
	waitFor(t, "the percent is raised again once the heap is small", func() bool { return readPercent() > base })

	stop()
	if p := readPercent(); p != base {
		t.Fatalf("percent after stop = %d, want %d", p, base)
	}
	if Floor() != 0 {
		t.Fatalf("Floor() after stop = %d, want 0", Floor())
	}
	// The sentinel armed before stop still runs its cleanup; it must not set a percent.
	for range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if p := readPercent(); p != base {
		t.Fatalf("percent some cycles after stop = %d, want %d", p, base)
	}
}

// Starts nest: the floor stands until the last stop, and a stop called twice counts once.
func TestStartsNest(t *testing.T) {
	base := readPercent()
	stopA := Start(32 << 20)
	stopB := Start(64 << 20)
	if Floor() != 32<<20 {
		t.Fatalf("Floor() = %d, want the first start's %d", Floor(), 32<<20)
	}
	stopA()
	stopA()
	if Floor() != 32<<20 {
		t.Fatal("the floor ended while a start had not stopped")
	}
	waitFor(t, "the floor still raises the percent", func() bool { return readPercent() > base })
	stopB()
	if Floor() != 0 || readPercent() != base {
		t.Fatalf("after the last stop: floor %d, percent %d (want 0, %d)", Floor(), readPercent(), base)
	}
}

// With the collector off, Start does nothing: turning it on would surprise whoever set GOGC=off.
func TestCollectorOffIsLeftOff(t *testing.T) {
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	stop := Start(16 << 20)
	defer stop()
	if Floor() != 0 {
		t.Fatalf("Floor() = %d with the collector off, want 0", Floor())
	}
	if p := readPercent(); p != -1 {
		t.Fatalf("percent = %d, want the collector left off", p)
	}
}

// cyclesSeen is how many times the running tuner has adjusted.
func cyclesSeen() int {
	mu.Lock()
	tu := running
	mu.Unlock()
	tu.mu.Lock()
	defer tu.mu.Unlock()
	return tu.cycles
}

// waitCycles runs collections until the tuner has adjusted n more times.
func waitCycles(t *testing.T, n int) {
	t.Helper()
	want := cyclesSeen() + n
	waitFor(t, "the tuner adjusts after collections", func() bool { return cyclesSeen() >= want })
}

// A percent someone else sets while the floor runs is theirs. Turned off (as
// internal/stacktest does, or GOGC=off with a memory limit set at run time), the collector
// stays off through the cycles that follow; turned on again, the floor resumes over the new
// percent; and stop leaves a percent set meanwhile in place.
func TestPercentSetMeanwhileIsKept(t *testing.T) {
	base := readPercent()
	stop := Start(16 << 20)
	defer stop()
	waitFor(t, "the floor raises the percent", func() bool { return readPercent() > base })

	debug.SetGCPercent(-1)
	defer debug.SetGCPercent(base)
	waitCycles(t, 3)
	if p := readPercent(); p != -1 {
		t.Fatalf("the collector was turned off while the floor ran; 3 adjustments later the percent is %d, want -1", p)
	}

	debug.SetGCPercent(1000) // above what the floor needs: it stays
	waitCycles(t, 3)
	if p := readPercent(); p != 1000 {
		t.Fatalf("percent %d after 1000 was set, want 1000 kept as the least", p)
	}
	debug.SetGCPercent(50) // below what the floor needs: raised, as a base of 50 would be
	waitFor(t, "the floor raises a percent of 50", func() bool { return readPercent() > 50 })

	debug.SetGCPercent(-1) // and no cycle from here on: stop must not take it for its own
	stop()
	if p := readPercent(); p != -1 {
		t.Fatalf("after stop the percent is %d, want -1 as set meanwhile", p)
	}
}

// The same with the memory limit running the cycles (GOGC=off and a limit, the usual way to
// run with a limit alone): no forced collection, and the collector stays off.
func TestMemoryLimitCyclesLeaveTheCollectorOff(t *testing.T) {
	base := readPercent()
	stop := Start(16 << 20)
	defer stop()
	waitFor(t, "the floor raises the percent", func() bool { return readPercent() > base })

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	defer debug.SetMemoryLimit(math.MaxInt64)
	debug.SetMemoryLimit(int64(ms.Sys) + 64<<20)
	old := debug.SetGCPercent(-1)
	want := cyclesSeen() + 3
	deadline := time.Now().Add(10 * time.Second)
	var sink []byte
	for cyclesSeen() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the memory limit ran no 3 adjusted cycles in 10s (cycles %d)", cyclesSeen())
		}
		sink = make([]byte, 64<<10) // garbage, until the limit starts cycles
	}
	runtime.KeepAlive(sink)
	if p := readPercent(); p != -1 {
		t.Fatalf("GOGC=off with a memory limit: 3 adjusted cycles later the percent is %d, want -1", p)
	}

	// Setting back the percent found hands it back: the floor runs as before, and stop
	// gives back the process's own.
	debug.SetGCPercent(old)
	debug.SetMemoryLimit(math.MaxInt64)
	waitCycles(t, 2)
	if p := readPercent(); p != old {
		t.Fatalf("percent %d after the one found (%d) was set back, want it kept", p, old)
	}
	stop()
	if p := readPercent(); p != base {
		t.Fatalf("percent after stop = %d, want the process's %d", p, base)
	}
}
