package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// /readyz's "not ready" warning is held back while its cause repeats (anyone may call it),
// but a different cause (the issuer came back, then the worker command went missing in a bad
// deploy) is logged at once: one limit for every cause would leave the old one as the last
// reason the log shows.
func TestReadyzLogsANewCause(t *testing.T) {
	var ready error
	f := newFixture(t, func(o *Options) {
		o.Ready = func(context.Context) error { return ready }
	})
	base := strings.TrimSuffix(f.url, "/mcp")
	ready = errors.New("issuer unreachable: keys not loaded")
	getBody(t, base+"/readyz")
	ready = nil
	getBody(t, base+"/readyz")
	ready = errors.New("worker command not found: exec: \"my-server\": not found")
	if status, _ := getBody(t, base+"/readyz"); status != 503 {
		t.Fatalf("setup: /readyz = %d", status)
	}
	if !strings.Contains(f.log.String(), "worker command not found") {
		t.Errorf("a new reason for not being ready was not logged; the log still names only the old one:\n%s", f.log.String())
	}
}
