package aside

import (
	"net/http"
	"runtime"
	"testing"
)

// A panic in f is the caller's: raised again on its goroutine with the same value, so that
// the recoverer answers 500 and net/http's ErrAbortHandler still aborts the response.
func TestRunRaisesAPanicOnItsCaller(t *testing.T) {
	for _, v := range []any{"boom", http.ErrAbortHandler} {
		func() {
			defer func() {
				if got := recover(); got != v {
					t.Errorf("recovered %v from Run; want %v", got, v)
				}
			}()
			Run(func() { panic(v) })
			t.Errorf("Run returned after its function panicked with %v", v)
		}()
	}
}

// Run returns once its function has: what the function wrote is the caller's to read.
func TestRunWaitsForItsFunction(t *testing.T) {
	var n int
	for range 100 {
		Run(func() { n++ })
	}
	if n != 100 {
		t.Errorf("after 100 runs the count is %d", n)
	}
}

// An f that ends its goroutine ends the caller's: the caller must not carry on as if f had
// done its work (an initialize would answer 200 with nothing).
func TestRunGoexitEndsTheCaller(t *testing.T) {
	reached := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(func() { runtime.Goexit() })
		reached = true
	}()
	<-done
	if reached {
		t.Error("Run returned after its function called runtime.Goexit")
	}
}
