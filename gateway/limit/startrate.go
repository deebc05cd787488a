package limit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// StartRate holds each user to a rate of worker starts: a token bucket per user, K being
// how the caller names a user. Starting a worker costs a process, its memory and its
// backend login, so a user who opens and drops sessions in a loop is slowed down long before
// the session caps are reached.
//
// Only users who started a worker recently have a bucket: a bucket that has refilled is the
// same as a new one and is forgotten, so the map is bounded by the users active in the last
// burst/rate seconds.
type StartRate[K comparable] struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[K]*rate.Limiter
	sweepAt int // the map's size at which refilled buckets are next forgotten
}

const minSweep = 1024

// NewStartRate builds the limiter; perSecond <= 0 means no limit (nil, which allows all).
func NewStartRate[K comparable](perSecond float64, burst int) *StartRate[K] {
	if perSecond <= 0 {
		return nil
	}
	return &StartRate[K]{limit: rate.Limit(perSecond), burst: burst, buckets: map[K]*rate.Limiter{}, sweepAt: minSweep}
}

// Take spends one start of user k's at now. If none is left it spends nothing and returns a
// *RateError saying how long until one is.
func (s *StartRate[K]) Take(k K, now time.Time) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[k]
	if b == nil {
		if len(s.buckets) >= s.sweepAt {
			s.sweep(now)
		}
		b = rate.NewLimiter(s.limit, s.burst)
		s.buckets[k] = b
	}
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return &RateError{Wait: d}
	}
	return nil
}

// sweep forgets the buckets that have refilled.
func (s *StartRate[K]) sweep(now time.Time) {
	for k, b := range s.buckets {
		if b.TokensAt(now) >= float64(s.burst) {
			delete(s.buckets, k)
		}
	}
	s.sweepAt = max(minSweep, 2*len(s.buckets))
}

// RateError is a worker start refused by the per-user start rate; Wait is how long until
// the next is allowed.
type RateError struct{ Wait time.Duration }

func (e *RateError) Error() string { return "worker starts too fast for this user" }
