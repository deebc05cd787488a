// Package stacktest measures, for tests, the goroutine stacks that calls leave behind.
package stacktest

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// PerCall makes calls calls of call with garbage collection off, so that no stack is halved
// meanwhile, and returns the goroutine stacks in use they added, per call, and the runtime's
// starting stack size (what a goroutine starts with, from the average of the stacks the last
// collection saw). call is to leave goroutines waiting whose stacks are what is measured; the
// figure includes stacks that goroutines which ended meanwhile left free in the runtime's
// stack spans (a few KiB over all the calls). The calls run on one P: a stack freed goes to
// its P's cache, and with a P per core the next goroutine, on another P, would not reuse it,
// so that the free stacks, counted in use, grew with the cores.
func PerCall(calls int, call func()) (per float64, startSize int64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	start := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	metrics.Read(start)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := int64(m.StackInuse)
	for range calls {
		call()
	}
	runtime.ReadMemStats(&m)
	return float64(int64(m.StackInuse)-before) / float64(calls), int64(start[0].Value.Uint64())
}
