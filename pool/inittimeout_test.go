package pool

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// A worker that never answers initialize fails its start with ErrInitTimeout once
// init_timeout has passed (the gateway names it to the client), not with a bare deadline.
func TestSilentWorkerFailsItsStartWithErrInitTimeout(t *testing.T) {
	const initTimeout = 300 * time.Millisecond
	silent := scriptLauncher{edit: func(cl *worker.CommandLauncher) { cl.Command = []string{"sleep", "30"} }}
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: silent, InitTimeout: initTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	id := Identity{Issuer: "https://issuer.test", Subject: "sub-alice", User: "alice", Session: "s1"}
	params := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	began := time.Now()
	_, _, err = p.Attach(t.Context(), Attach{Identity: id, Caller: newCaller(time.Time{}), Params: params})
	took := time.Since(began)
	if !errors.Is(err, ErrInitTimeout) {
		t.Fatalf("the attach failed with %v, want ErrInitTimeout", err)
	}
	if took < initTimeout || took > waitFor {
		t.Errorf("the start failed after %v, want after init_timeout (%v)", took, initTimeout)
	}
}
