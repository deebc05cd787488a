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
	step  time.Duration // between one slot's tick and the next slot's
	fired int           // steps whose slot has ticked; the clock's goroutine's own
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func startKeepaliveClock(interval time.Duration) *keepaliveClock {
	k := newKeepaliveClock(interval)
	go k.run()
	return k
}

func newKeepaliveClock(interval time.Duration) *keepaliveClock {
	k := &keepaliveClock{step: max(interval/keepaliveSlots, time.Millisecond), quit: make(chan struct{}), done: make(chan struct{})}
	for i := range k.slots {
		ch := make(chan struct{})
		k.slots[i].Store(&ch)
	}
	return k
}

func (k *keepaliveClock) run() {
	defer close(k.done)
	t := time.NewTicker(k.step)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-k.quit:
			return
		case now := <-t.C:
			k.advance(now.Sub(start))
		}
	}
}

// advance ticks the slots due elapsed after the clock's start. They are counted from the
// time, not from the ticks received: a ticker drops the ticks its receiver was too late for,
// and counting ticks would put every slot's next tick a step later for each one dropped.
// After a stall of more than an interval, each slot ticks once.
func (k *keepaliveClock) advance(elapsed time.Duration) {
	due := int(elapsed / k.step)
	k.fired = max(k.fired, due-keepaliveSlots)
	for ; k.fired < due; k.fired++ {
		ch := make(chan struct{})
		close(*k.slots[k.fired%keepaliveSlots].Swap(&ch))
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
