package gateway

import (
	"net/http"
	"testing"
)

// A panic aside is the caller's: raised again on its goroutine with the same value, so that
// the recoverer answers 500 and net/http's ErrAbortHandler still aborts the response.
func TestAsideRaisesAPanicOnItsCaller(t *testing.T) {
	for _, v := range []any{"boom", http.ErrAbortHandler} {
		func() {
			defer func() {
				if got := recover(); got != v {
					t.Errorf("recovered %v from aside; want %v", got, v)
				}
			}()
			aside(func() { panic(v) })
			t.Errorf("aside returned after its function panicked with %v", v)
		}()
	}
}

// aside returns once its function has: what the function wrote is the caller's to read.
func TestAsideWaitsForItsFunction(t *testing.T) {
	var n int
	for range 100 {
		aside(func() { n++ })
	}
	if n != 100 {
		t.Errorf("after 100 asides the count is %d", n)
	}
}
