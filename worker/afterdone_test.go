package worker

import (
	"testing"
	"time"
)

// TestAfterDoneRunsOnceTheWorkerIsDone: a function registered while the worker runs, and one
// registered after it is done, each run once, and only after Done is closed.
func TestAfterDoneRunsOnceTheWorkerIsDone(t *testing.T) {
	p := startFake(t, "echo", nil)
	ran := make(chan bool, 2)
	seesDone := func() {
		select {
		case <-p.Done():
			ran <- true
		default:
			ran <- false
		}
	}
	p.AfterDone(seesDone)
	select {
	case <-ran:
		t.Fatal("AfterDone ran while the worker runs")
	case <-time.After(50 * time.Millisecond):
	}
	call(t, p, `1`, "crash", "")
	wait := func(what string) {
		select {
		case ok := <-ran:
			if !ok {
				t.Errorf("%s: ran before Done was closed", what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: never ran", what)
		}
	}
	wait("registered before the end")
	p.AfterDone(seesDone)
	wait("registered after the end")
	select {
	case <-ran:
		t.Error("a function ran twice")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestStartKeepsNoSecrets: once the worker runs, the gateway holds neither its environment
// (kilobytes per idle session, and it may name secrets) nor its spec's credential; only the
// copy it redacts the worker's lines with (TestEchoedCredentialIsRedacted).
func TestStartKeepsNoSecrets(t *testing.T) {
	p := startFake(t, "echo", nil)
	if p.spec.Env != nil || p.cmd.Env != nil || p.spec.Credential != nil || p.spec.Secrets != nil {
		t.Errorf("kept after start: spec.Env %d entries, cmd.Env %d entries, credential %d bytes, secrets %d",
			len(p.spec.Env), len(p.cmd.Env), len(p.spec.Credential), len(p.spec.Secrets))
	}
}
