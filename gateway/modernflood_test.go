package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/pool"
)

// The worker mode modernflood answers the handshake like a legacy worker; at its first
// tools/call it sends one elicitation/create (the call is parked for the client's input), then
// stops reading its stdin and sends 20000 more elicitation/create requests at once.
func init() {
	if os.Getenv("GEMGATE_TEST_WORKER") == "modernflood" {
		os.Exit(playModernFlood())
	}
}

func playModernFlood() int {
	out := bufio.NewWriter(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		switch req.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"0"}}}`+"\n", req.ID)
		case "server/discover":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
		case "tools/call":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":"first","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}`+"\n")
			out.Flush()
			time.Sleep(300 * time.Millisecond) // the call is parked by now
			for i := range 20000 {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":"f%d","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}`+"\n", i)
			}
			out.Flush()
			select {} // never reads again
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
		}
		out.Flush()
	}
	return 0
}

// A worker that stops reading and floods a parked 2026-07-28 call with requests: those over
// the call's bound are refused through the worker's bounded queue of gemgate's answers
// (pool.Member.Refuse), not each by a goroutine that waits on the worker's full stdin.
func TestModernCallerRequestFloodIsBounded(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "modernflood", dataDir: t.TempDir()}
	})
	c := f.client("alice-rw")
	base := runtime.NumGoroutine()
	meta := modernMeta()
	meta[metaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	r := c.modern("1", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}, "_meta": meta})
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
