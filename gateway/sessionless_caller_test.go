package gateway

import (
	"runtime"
	"testing"
)

// TestModernCallerIsSmall: a modern call's caller is made on every request, and most calls
// carry no progress at all, so its event buffer grows with what it holds instead of being a
// channel of modernEventBuffer slots (1.5 KiB) made up front.
func TestModernCallerIsSmall(t *testing.T) {
	const n = 200
	keep := make([]*modernCaller, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = newModernCaller(false)
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 640 {
		t.Errorf("a modern caller costs %d bytes when made, want at most 640", per)
	}
}
