package devissuer

import (
	"net"
	"testing"
)

// Close frees the issuer's port at once, even when its server goroutine had not started to
// serve yet: a restart on the same address (gemgate dev keeps the issuer's port) must work.
func TestCloseFreesThePort(t *testing.T) {
	for range 50 {
		iss, err := Start(Options{Audience: testAudience})
		if err != nil {
			t.Fatal(err)
		}
		addr := iss.listener.Addr().String()
		if err := iss.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listening again on %s right after Close: %v", addr, err)
		}
		ln.Close()
	}
}
