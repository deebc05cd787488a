// Package aside runs deep work on a goroutine of its own, so that a goroutine that then waits
// for long keeps a small stack.
package aside

import "runtime"

// Run runs f on a goroutine of its own and waits for it. It is for the deep work of a request
// whose goroutine then waits for long (a token's full check, an initialize, a stream's first
// flush): run there, it would double the goroutine's stack, and an idle gateway's rare garbage
// collections would leave it doubled for hours. docs/PERFORMANCE.md measures the gain.
//
// A panic in f is raised again on the caller's goroutine, where the recoverer sees it, and
// an f that ends its goroutine (runtime.Goexit) ends the caller's too: the caller carries on
// only when f returned.
func Run(f func()) {
	var returned bool
	var panicked any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if !returned {
				panicked = recover()
			}
		}()
		f()
		returned = true
	}()
	<-done
	switch {
	case returned:
	case panicked != nil:
		panic(panicked)
	default:
		runtime.Goexit()
	}
}
