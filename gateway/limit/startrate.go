package limit

import (
	"maps"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// StartRate holds each user (K) to a rate of worker starts (a process, memory, a backend
// login each), a token bucket each; a refilled bucket is forgotten.
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

// Take spends one start of user k's at now, or returns a *RateError with the wait.
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

func (s *StartRate[K]) sweep(now time.Time) {
	maps.DeleteFunc(s.buckets, func(_ K, b *rate.Limiter) bool { return b.TokensAt(now) >= float64(s.burst) })
	s.sweepAt = max(minSweep, 2*len(s.buckets))
}

// RateError is a worker start refused by the per-user start rate.
type RateError struct{ Wait time.Duration }

func (e *RateError) Error() string { return "worker starts too fast for this user" }
