package worker

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// stopWithin runs p.Stop and fails the test unless it returns within d (and then kills the
// worker).
func stopWithin(t *testing.T, p *Process, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
		return time.Since(start)
	case <-time.After(d):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL) // so that the cleanup's Stop does not wait out the grace
		<-stopped
		t.Fatalf("Stop did not return within %v", d)
		return 0
	}
}

// signalOf is the signal that ended the worker, or 0 if it exited on its own.
func signalOf(t *testing.T, err error) syscall.Signal {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}

func startWithGrace(t *testing.T, mode string, grace time.Duration) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Spec{Path: exe, Env: append(os.Environ(), "GEMGATE_TEST_WORKER="+mode), StopGrace: grace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestStopClosesStdinFirst: Stop's first step is closing the worker's stdin, and a worker that
// ends at the end of its input ends there, on its own, with no signal: Stop returns long
// before the grace it would wait for a signal, and the worker's exit is its own.
func TestStopClosesStdinFirst(t *testing.T) {
	const grace = time.Minute
	p := startWithGrace(t, "echo", grace)
	call(t, p, `1`, "ping", "") // it serves
	took := stopWithin(t, p, 15*time.Second)
	err := p.Err()
	if sig := signalOf(t, err); sig != 0 {
		t.Fatalf("the worker was ended by %v (%v); want it to exit on its own once its stdin closed", sig, err)
	}
	if took >= grace {
		t.Errorf("Stop took %v, the grace before a signal (%v)", took, grace)
	}
}

// TestStopSendsSIGTERMBeforeSIGKILL: a worker that does not read its stdin gets SIGTERM once
// the grace after closing stdin is over, not before and not SIGKILL: it dies of SIGTERM.
// (TestStopEscalatesAndLeavesNoChildren pins the SIGKILL that follows for one that ignores
// SIGTERM.)
func TestStopSendsSIGTERMBeforeSIGKILL(t *testing.T) {
	const grace = 200 * time.Millisecond
	p := startWithGrace(t, "deaf", grace)
	took := stopWithin(t, p, 20*time.Second)
	err := p.Err()
	if sig := signalOf(t, err); sig != syscall.SIGTERM {
		t.Fatalf("the worker that ignores the end of its stdin ended with %v (signal %v); want SIGTERM", err, sig)
	}
	if took < grace {
		t.Errorf("the worker was signalled after %v, before the grace of %v that follows closing stdin", took, grace)
	}
}
