package compose

// What an operator may rely on from the compose files: each test failed on the files before
// their fix.

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// gemgate's serve defaults (cmd/gemgate/config.go) and the bound on the stop phase after the
// grace (docs/operations.md: "a stop takes at most drain_delay + shutdown_grace + about 6 s").
const (
	defaultDrainDelay    = 5 * time.Second
	defaultShutdownGrace = 10 * time.Second
	workerStop           = 6 * time.Second
	dockerStopDefault    = 10 * time.Second // docker compose stop without stop_grace_period
)

// Docker sends SIGKILL stop_grace_period after SIGTERM: it must cover gemgate's whole stop, or
// calls in flight get no answer and workers are killed mid-write.
func TestComposeStopGraceCoversDrain(t *testing.T) {
	for _, file := range []string{composeFile, scaleFile} {
		p := loadFile(t, file)
		var names []string
		for name := range p.Services {
			if strings.HasPrefix(name, "gemgate") {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			svc := p.Services[name]
			dur := func(key string, def time.Duration) time.Duration {
				if v := svc.Environment[key]; v != nil {
					d, err := time.ParseDuration(*v)
					if err != nil {
						t.Fatalf("%s %s: %s=%q: %v", file, name, key, *v, err)
					}
					return d
				}
				return def
			}
			need := dur("GEMGATE_DRAIN_DELAY", defaultDrainDelay) + dur("GEMGATE_SHUTDOWN_GRACE", defaultShutdownGrace) + workerStop
			grace := dockerStopDefault
			if svc.StopGracePeriod != nil {
				grace = time.Duration(*svc.StopGracePeriod)
			}
			if grace < need {
				t.Errorf("%s: service %s is SIGKILLed %s after SIGTERM, but its stop takes up to %s (drain_delay + shutdown_grace + workers' stop)", file, name, grace, need)
			}
		}
	}
}

// docs/scale-out.md ("What every replica needs") and haproxy.cfg's `option forwardfor` comment:
// every replica lists HAProxy in trusted_proxies, or every log line names HAProxy as the client.
func TestComposeScaleTrustsHAProxy(t *testing.T) {
	p := loadFile(t, scaleFile)
	for _, name := range []string{"gemgate1", "gemgate2", "gemgate3"} {
		if v := p.Services[name].Environment["GEMGATE_TRUSTED_PROXIES"]; v == nil || *v == "" {
			t.Errorf("%s sets no GEMGATE_TRUSTED_PROXIES: its logs record HAProxy's address for every client", name)
		}
	}
}
