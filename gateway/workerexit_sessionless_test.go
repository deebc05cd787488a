package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// A sessionless call whose worker dies under it, outside a shutdown, is answered 200 with a
// JSON-RPC error for its id (data.kind workerExit), never a 503: the call reached the worker
// and may have run, and a balancer replays a 503 on another replica.
//
// With on_worker_exit: end the pool also lets the call's caller go, which races the call's
// own failure: each run takes either path, so the test runs a few times.
func TestSessionlessCallWorkerDiesIsAnErrorNotA503(t *testing.T) {
	for _, exit := range []string{pool.ExitKeep, pool.ExitEnd, pool.ExitEnd, pool.ExitEnd, pool.ExitEnd} {
		t.Run(exit, func(t *testing.T) { sessionlessCallWorkerDies(t, exit) })
	}
}

func sessionlessCallWorkerDies(t *testing.T, onExit string) {
	f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser, OnWorkerExit: onExit} })
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "x", "method": "tools/call",
		"params": map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 60}, "_meta": sessionlessMeta()}})
	var resp *http.Response
	var lines <-chan string
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, lines = rawStream(t, f.client("alice-rw"), http.MethodPost, string(b),
			sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "slow", "Accept", "application/json")
	}()
	eventually(t, 10*time.Second, "the call to reach the worker", func() bool {
		for _, rec := range f.log.records(t) {
			if rec["direction"] == "to_worker" && strings.Contains(fmt.Sprint(rec["body"]), `"slow"`) {
				return true
			}
		}
		return false
	})
	// The demo speaks 2026-07-28: the call runs on alice's sessionless worker.
	pid := 0
	for _, rec := range f.log.records(t) {
		if rec["msg"] == "worker started" && rec["sessionless"] == true {
			pid = int(rec["pid"].(float64))
		}
	}
	if pid == 0 {
		t.Fatalf("no sessionless worker started; log:\n%s", f.log.String())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want 200 with a JSON-RPC error", resp.StatusCode)
	}
	var m *jsonrpc.Message
	for _, l := range rest(t, lines, 10*time.Second) {
		if strings.HasPrefix(l, "{") {
			m, _ = jsonrpc.Parse([]byte(l), jsonrpc.Options{})
		}
	}
	if m == nil || m.Error == nil || string(m.ID) != `"x"` || !strings.Contains(string(m.Error), `"kind":"workerExit"`) {
		t.Fatalf("answer %+v, want a JSON-RPC error for id \"x\" with kind workerExit", m)
	}
}
