package sessionless

import (
	"runtime"
	"testing"
)

// TestSessionlessCallerIsSmall: a sessionless call's caller is made on every request, and most
// calls carry no progress at all, so its event buffer grows with what it holds instead of being
// a channel of eventBuffer slots (1.5 KiB) made up front.
func TestSessionlessCallerIsSmall(t *testing.T) {
	const n = 200
	keep := make([]*caller, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = newCaller("")
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 640 {
		t.Errorf("a sessionless caller costs %d bytes when made, want at most 640", per)
	}
}
