package limit

import (
	"errors"
)

// None, given as a cap or a rate in Settings, lifts it.
const None = -1

// Settings bound what users may start. Zero values mean the defaults below, which are never
// "unlimited": a single user must not be able to take the host's descriptors or memory. A
// negative value (None) lifts a cap.
type Settings struct {
	// MaxSessions caps sessions (each with its worker) gateway-wide; over it, initialize gets
	// 503. Default: Capacity.MaxSessions, from the open-files limit and memory.
	MaxSessions int
	// MaxSessionsPerUser caps one user's sessions; over it, initialize gets 429. Default 16;
	// never more than MaxSessions.
	MaxSessionsPerUser int
	// WorkerStartRate is how many workers one user may start per second once the burst is
	// spent; faster, initialize gets 429 with the wait in Retry-After. Default 2.
	WorkerStartRate float64
	// WorkerStartBurst is how many workers one user may start at once. Default 8.
	WorkerStartBurst int

	// Capacity sizes the defaults; zero means HostCapacity(). A test seam.
	Capacity Capacity
}

// Default start rate: a client opens a session or two at a time; an open-and-drop loop is
// held to 2 worker starts a second per user.
const (
	defaultWorkerStartRate  = 2
	defaultWorkerStartBurst = 8
	// defaultMaxSessionsPerUser lets one user run a few clients at once (an editor, an
	// inspector, scripts) but not take the gateway.
	defaultMaxSessionsPerUser = 16
)

// Defaults are the settings a gateway on a host of capacity c gets by default.
func Defaults(c Capacity) Settings {
	return Settings{Capacity: c}.WithDefaults()
}

// Validate reports every unworkable combination at once.
func (l Settings) Validate() error {
	var errs []error
	if l.WorkerStartBurst < 0 {
		errs = append(errs, errors.New("worker_start_burst must not be negative"))
	}
	return errors.Join(errs...)
}

// WithDefaults fills in the defaults; a lifted cap becomes 0, which the session table and
// the start rate read as "none".
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

// orDefault is v as the table and the rate read it: 0 takes def, and None (any negative
// value) becomes 0, "none".
func orDefault[T int | float64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
