package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Each port is free, below the ephemeral range, and handed out once.
func TestPortsAreFreeAndDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < low || p >= high || seen[p] {
			t.Fatalf("port %d: outside %d–%d or given twice", p, low, high-1)
		}
		seen[p] = true
	}
	addr, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s is not free: %v", addr, err)
	}
	ln.Close()
}

// A port something listens on is never handed out.
func TestBusyPortIsPassedOver(t *testing.T) {
	var busy []net.Listener
	defer func() {
		for _, ln := range busy {
			ln.Close()
		}
	}()
	taken := map[int]bool{}
	for p := low; p < low+2000; p++ { // a tenth of the range held busy
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			busy = append(busy, ln)
			taken[p] = true
		}
	}
	for range 100 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if taken[p] {
			t.Fatalf("port %d is busy, and was handed out", p)
		}
	}
}
