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

// TestCallerTakesLogLinesAtItsLevel: a call's client gets the worker's log lines only when its
// request asked for a level (_meta logLevel), and only at that level or a more severe one; it
// gets the call's other notifications (progress), never the worker's withdrawal of a question.
func TestCallerTakesLogLinesAtItsLevel(t *testing.T) {
	line := func(level string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"` + level + `","data":"x"}}`)
	}
	progress := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	cancelled := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"g1"}}`)
	for _, tt := range []struct {
		asked string
		taken map[string]bool
	}{
		{"", map[string]bool{"debug": false, "warning": false, "emergency": false}},
		{"warning", map[string]bool{"debug": false, "info": false, "notice": false, "warning": true, "error": true, "emergency": true}},
		{"debug", map[string]bool{"debug": true, "info": true, "emergency": true}},
		{"emergency", map[string]bool{"alert": false, "emergency": true}},
	} {
		c := newCaller(tt.asked)
		for level, want := range tt.taken {
			if got := c.takes(line(level)); got != want {
				t.Errorf("asked %q: a %s line taken %v, want %v", tt.asked, level, got, want)
			}
		}
		if !c.takes(progress) || c.takes(cancelled) {
			t.Errorf("asked %q: progress taken %v, cancelled taken %v; want true, false", tt.asked, c.takes(progress), c.takes(cancelled))
		}
	}
}
