package wire

import "time"

// KeepaliveInterval is sized to proxy and NAT idle timeouts, not to sessions: an idle stream
// carries a comment at least this often.
const KeepaliveInterval = 15 * time.Second

// KeepaliveClock hands each stream a ticker of its own for its keepalive comments.
type KeepaliveClock struct{ interval time.Duration }

// NewKeepaliveClock is the clock of streams whose keepalives come every interval.
func NewKeepaliveClock(interval time.Duration) *KeepaliveClock {
	return &KeepaliveClock{interval: interval}
}

// Slot gives a new stream its ticker: its first keepalive comes an interval after its start,
// each one after that an interval after the one before. A ticker that nothing references any
// more is collected, stopped or not, so a stream that ends leaves nothing behind.
func (k *KeepaliveClock) Slot() KeepaliveSlot {
	return KeepaliveSlot{time.NewTicker(k.interval)}
}

// KeepaliveSlot is a stream's keepalive ticker.
type KeepaliveSlot struct{ t *time.Ticker }

// Tick delivers the ticker's next tick.
func (s KeepaliveSlot) Tick() <-chan time.Time { return s.t.C }
