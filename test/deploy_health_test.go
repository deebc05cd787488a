package test

import (
	"errors"
	"os/exec"
	"testing"
)

// docs/operations.md: `gemgate check --health URL` exits 0 when URL answers 200, 1 when not,
// and 2 when URL is not a URL: a health check written wrong (a Dockerfile's HEALTHCHECK, a
// probe script) is a mistake to fix, not a replica that is down. A URL without a scheme, or of
// a scheme the check cannot ask, is not a URL it can check.
func TestDeployHealthCheckRefusesWhatIsNotAURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"healthz", "127.0.0.1/healthz", "localhost:8080/healthz", "ftp://127.0.0.1:1/healthz", "http:///healthz"} {
		out, err := exec.Command(gemgateBin, "check", "--health", u).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("gemgate check --health %s: %v, want exit status 2 (not a URL)\n%s", u, err, out)
		}
	}
	// An http URL nothing answers is a failed check: 1.
	out, err := exec.Command(gemgateBin, "check", "--health", "http://127.0.0.1:1/healthz").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("gemgate check --health against nothing: %v, want exit status 1\n%s", err, out)
	}
}
