package gateway

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// A worker that stops reading and floods a parked 2026-07-28 call with requests: those over
// the call's bound are refused through the worker's bounded queue of gemgate's answers
// (pool.Member.Refuse), not each by a goroutine that waits on the worker's full stdin.
func TestSessionlessCallerRequestFloodIsBounded(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "sessionlessflood", dataDir: t.TempDir()}
	})
	c := f.client("alice-rw")
	base := runtime.NumGoroutine()
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	r := c.sessionless("1", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}, "_meta": meta})
	var res struct {
		ResultType string `json:"resultType"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("the call was not parked: %d %s", r.status, r.body)
	}
	peak := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		peak = max(peak, runtime.NumGoroutine()-base)
	}
	if peak > 200 {
		buf := make([]byte, 64<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		t.Fatalf("the flood held %d more goroutines at once (%d now writing to the worker)", peak, strings.Count(stacks, "worker.(*Process).Reply("))
	}
}
