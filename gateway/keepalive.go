package gateway

import (
	"sync"
	"sync/atomic"
	"time"
)

// keepaliveInterval is sized to proxy and NAT idle timeouts, not to sessions: an idle stream
// carries a comment at least this often.
const keepaliveInterval = 15 * time.Second

// keepaliveSlots is how many groups the keepalive clock spreads the streams over.
const keepaliveSlots = 16

// keepaliveClock times the keepalive comments of all of a gateway's streams with one timer.
// A stream takes a slot and waits on the slot's channel, which the clock closes once per
// interval and replaces. The slots tick in turn, one every interval/keepaliveSlots, so that
// ten thousand idle streams do not all write in the same instant.
//
// It replaced a time.Ticker per stream: a runtime timer and a channel held by every idle
// stream for its whole life, about 190 B of heap each, and the collector's headroom over it.
type keepaliveClock struct {
	slots [keepaliveSlots]atomic.Pointer[chan struct{}]
	next  atomic.Uint32 // counts the slots handed out
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func startKeepaliveClock(interval time.Duration) *keepaliveClock {
	k := &keepaliveClock{quit: make(chan struct{}), done: make(chan struct{})}
	for i := range k.slots {
		ch := make(chan struct{})
		k.slots[i].Store(&ch)
	}
	go k.run(interval / keepaliveSlots)
	return k
}

func (k *keepaliveClock) run(step time.Duration) {
	defer close(k.done)
	t := time.NewTicker(step)
	defer t.Stop()
	for i := 0; ; i = (i + 1) % keepaliveSlots {
		select {
		case <-k.quit:
			return
		case <-t.C:
			ch := make(chan struct{})
			close(*k.slots[i].Swap(&ch))
		}
	}
}

// stop ends the clock; a stream waiting on it then gets no more keepalives. A second stop
// does nothing (Gateway.Close may be called again).
func (k *keepaliveClock) stop() {
	k.once.Do(func() { close(k.quit) })
	<-k.done
}

// slot gives a new stream its slot, the next in turn.
func (k *keepaliveClock) slot() keepaliveSlot {
	return keepaliveSlot{k: k, i: (k.next.Add(1) - 1) % keepaliveSlots}
}

// keepaliveSlot is a stream's place on the clock. A stream's first keepalive comes within an
// interval of its start, each one after that an interval after the one before.
type keepaliveSlot struct {
	k *keepaliveClock
	i uint32
}

// tick is closed at the slot's next tick. A stream that took it must take it again after it
// closed, for the tick after.
func (s keepaliveSlot) tick() <-chan struct{} { return *s.k.slots[s.i].Load() }
