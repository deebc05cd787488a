// Package aside runs deep work on a goroutine of its own, so that a goroutine that then waits
// for long keeps a small stack.
package aside

import "runtime"

// Run runs f on a goroutine of its own and waits for it. It is for the deep work of a request
// whose goroutine then waits for long: verifying a token not yet cached, opening a session and
// starting its GET stream, on a connection that goes on to hold that stream, idle, for hours.
//
// A goroutine's stack grows to fit the deepest call it makes and is halved at most once per
// garbage collection, and only while less than a quarter of it is in use. A token's full
// check (signature and claims), an initialize (the worker's attach, strict reads, the
// session's log line) or a stream's first flush (net/http's header writing) run on the
// connection's goroutine would grow its stack to 16 KiB; the stream's wait needs 8, and an
// idle gateway collects garbage rarely, so each idle session would keep the doubled stack
// until collections came. Run aside, the deep frames live on a goroutine that ends with them.
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
