package gateway

import "time"

// keepaliveInterval is sized to proxy and NAT idle timeouts, not to sessions: an idle stream
// carries a comment at least this often.
const keepaliveInterval = 15 * time.Second

// keepaliveClock hands each stream a ticker of its own for its keepalive comments.
type keepaliveClock struct{ interval time.Duration }

func startKeepaliveClock(interval time.Duration) *keepaliveClock {
	return &keepaliveClock{interval: interval}
}

// slot gives a new stream its ticker: its first keepalive comes an interval after its start,
// each one after that an interval after the one before. A ticker that nothing references any
// more is collected, stopped or not, so a stream that ends leaves nothing behind.
func (k *keepaliveClock) slot() keepaliveSlot {
	return keepaliveSlot{time.NewTicker(k.interval)}
}

// keepaliveSlot is a stream's keepalive ticker.
type keepaliveSlot struct{ t *time.Ticker }

// tick delivers the ticker's next tick.
func (s keepaliveSlot) tick() <-chan time.Time { return s.t.C }
