package gateway

import (
	"errors"
)

// NoLimit, given as a cap or a rate in Limits, lifts it.
const NoLimit = -1

// Limits bounds what users may start. Zero values mean the defaults below, which are never
// "unlimited": a single user must not be able to take the host's descriptors or memory. A
// negative value (NoLimit) lifts a cap.
type Limits struct {
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

// DefaultLimits are the limits a gateway on a host of capacity c gets by default.
func DefaultLimits(c Capacity) Limits {
	return Limits{Capacity: c}.withDefaults()
}

// Validate reports every unworkable combination at once.
func (l Limits) Validate() error {
	var errs []error
	if l.WorkerStartBurst < 0 {
		errs = append(errs, errors.New("worker_start_burst must not be negative"))
	}
	return errors.Join(errs...)
}

// withDefaults fills in the defaults; a lifted cap becomes 0, which the table and the rate
// read as "none".
func (l Limits) withDefaults() Limits {
	if l.Capacity == (Capacity{}) && (l.MaxSessions == 0 || l.MaxSessionsPerUser == 0) {
		l.Capacity = HostCapacity()
	}
	switch {
	case l.MaxSessions == 0:
		l.MaxSessions = l.Capacity.MaxSessions()
	case l.MaxSessions < 0:
		l.MaxSessions = 0
	}
	switch {
	case l.MaxSessionsPerUser == 0:
		l.MaxSessionsPerUser = defaultMaxSessionsPerUser
	case l.MaxSessionsPerUser < 0:
		l.MaxSessionsPerUser = 0
	}
	if l.MaxSessions > 0 && (l.MaxSessionsPerUser == 0 || l.MaxSessionsPerUser > l.MaxSessions) {
		l.MaxSessionsPerUser = l.MaxSessions // the smaller cap is the one that holds
	}
	switch {
	case l.WorkerStartRate == 0:
		l.WorkerStartRate = defaultWorkerStartRate
	case l.WorkerStartRate < 0:
		l.WorkerStartRate = 0
	}
	if l.WorkerStartBurst <= 0 {
		l.WorkerStartBurst = defaultWorkerStartBurst
	}
	return l
}
