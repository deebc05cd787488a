// Package freeport gives tests a loopback address to hand to a process that listens on it
// later (a gateway restarted on the same address, HAProxy, Prometheus), where ":0" cannot be
// used.
//
// Such an address is free only until something else takes it. A port the kernel picked for
// a listener on ":0" comes from the ephemeral range, which the kernel also hands out to
// every outgoing connection on the machine, and to every other test's ":0" listener; in a
// busy test run one of them can take it before the process that was meant to. So the ports
// here are drawn at random from below the ephemeral range (20000–32767 on Linux's default
// 32768–60999), where only an explicit bind lands, checked free by binding them, and never
// handed out twice by one process.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
)

const (
	low  = 20000
	high = 32768 // the start of Linux's default ephemeral range
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Addr is a loopback address, 127.0.0.1:PORT, that nothing listens on right now and that
// this process has not handed out before.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// Port is Addr's port.
func Port() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		p := low + rand.IntN(high-low)
		if given[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken
		}
		ln.Close()
		given[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("freeport: no free loopback port found in %d–%d", low, high-1)
}
