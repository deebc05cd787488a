package limit

import (
	"errors"
)

// None, given as a cap or a rate in Settings, lifts it.
const None = -1

// Settings bound what users may start. Zero values mean defaults that are never "unlimited":
// one user must not take the host's descriptors or memory. None lifts a cap.
type Settings struct {
	// MaxSessions caps sessions gateway-wide (503). Default: Capacity.MaxSessions.
	MaxSessions int
	// MaxSessionsPerUser caps one user's sessions (429). Default 16, at most MaxSessions.
	MaxSessionsPerUser int
	// WorkerStartRate is how many workers one user may start per second once the burst is
	// spent; faster gets 429 with the wait in Retry-After. Default 2.
	WorkerStartRate  float64
	WorkerStartBurst int // default 8

	Capacity Capacity // sizes the defaults; zero means HostCapacity(). A test seam.
}

const (
	defaultWorkerStartRate    = 2
	defaultWorkerStartBurst   = 8
	defaultMaxSessionsPerUser = 16 // a few clients at once (an editor, an inspector, scripts)
)

// Defaults are the settings a gateway on a host of capacity c gets by default.
func Defaults(c Capacity) Settings { return Settings{Capacity: c}.WithDefaults() }

func (l Settings) Validate() error {
	if l.WorkerStartBurst < 0 {
		return errors.New("worker_start_burst must not be negative")
	}
	return nil
}

// WithDefaults fills in the defaults; a lifted cap becomes 0, read as "none".
func (l Settings) WithDefaults() Settings {
	if l.Capacity == (Capacity{}) && (l.MaxSessions == 0 || l.MaxSessionsPerUser == 0) {
		l.Capacity = HostCapacity()
	}
	l.MaxSessions = orDefault(l.MaxSessions, l.Capacity.MaxSessions())
	l.MaxSessionsPerUser = orDefault(l.MaxSessionsPerUser, defaultMaxSessionsPerUser)
	if l.MaxSessions > 0 && (l.MaxSessionsPerUser == 0 || l.MaxSessionsPerUser > l.MaxSessions) {
		l.MaxSessionsPerUser = l.MaxSessions // the smaller cap is the one that holds
	}
	l.WorkerStartRate = orDefault(l.WorkerStartRate, defaultWorkerStartRate)
	if l.WorkerStartBurst <= 0 {
		l.WorkerStartBurst = defaultWorkerStartBurst
	}
	return l
}

// orDefault: 0 takes def, and None (any negative value) becomes 0, "none".
func orDefault[T int | float64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
