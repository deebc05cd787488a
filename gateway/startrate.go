package gateway

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// startRate holds each user to a rate of worker starts: a token bucket per owner. Starting a
// worker costs a process, its memory and its backend login, so a user who opens and drops
// sessions in a loop is slowed down long before the session caps are reached.
//
// Only owners who started a worker recently have a bucket: a bucket that has refilled is the
// same as a new one and is forgotten, so the map is bounded by the users active in the last
// burst/rate seconds.
type startRate struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[owner]*rate.Limiter
	sweepAt int // the map's size at which refilled buckets are next forgotten
}

const minSweep = 1024

// newStartRate builds the limiter; perSecond <= 0 means no limit (nil, which allows all).
func newStartRate(perSecond float64, burst int) *startRate {
	if perSecond <= 0 {
		return nil
	}
	return &startRate{limit: rate.Limit(perSecond), burst: burst, buckets: map[owner]*rate.Limiter{}, sweepAt: minSweep}
}

// take spends one start of o's at now. If none is left it spends nothing and says how long
// until one is.
func (s *startRate) take(o owner, now time.Time) (ok bool, wait time.Duration) {
	if s == nil {
		return true, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[o]
	if b == nil {
		if len(s.buckets) >= s.sweepAt {
			s.sweep(now)
		}
		b = rate.NewLimiter(s.limit, s.burst)
		s.buckets[o] = b
	}
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// sweep forgets the buckets that have refilled.
func (s *startRate) sweep(now time.Time) {
	for o, b := range s.buckets {
		if b.TokensAt(now) >= float64(s.burst) {
			delete(s.buckets, o)
		}
	}
	s.sweepAt = max(minSweep, 2*len(s.buckets))
}

func (s *startRate) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buckets)
}

// rateError is a worker start refused by the per-user start rate; wait is how long until
// the next is allowed.
type rateError struct{ wait time.Duration }

func (e *rateError) Error() string { return "worker starts too fast for this user" }
