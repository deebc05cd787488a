package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// gemgate is a 2026-07-28 server without the tasks extension (io.modelcontextprotocol/tasks):
// its methods are unknown (404 -32601), server/discover does not advertise it, and a request
// that asks for a task anyway (a task parameter, the extension among the client's
// capabilities) is served as a plain one, with a complete result, by both kinds of worker
// program (extensions, "Graceful Degradation").
func TestSessionlessTasksUnsupported(t *testing.T) {
	for _, mode := range []string{"demo", "legacydemo"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.Pool = pool.Settings{WorkerPer: pool.PerUser}
				o.Workers = &testLauncher{mode: mode, dataDir: t.TempDir()}
			})
			c := f.client("alice-rw")
			for i, method := range []string{"tasks/get", "tasks/list", "tasks/cancel", "tasks/result", "tasks/update"} {
				r := c.sessionless(strings.Repeat("7", i+1), method, map[string]any{"taskId": "t1"})
				if r.status != http.StatusNotFound || rpcError(t, r.only(t)).Code != jsonrpc.CodeMethodNotFound {
					t.Errorf("%s: %d %s, want 404 -32601", method, r.status, r.body)
				}
			}
			meta := sessionlessMeta()
			meta[sessionless.MetaClientCapabilities] = map[string]any{"tasks": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
			r := c.sessionless("1", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}, "task": map[string]any{"ttl": 60000}, "_meta": meta})
			if r.status != http.StatusOK || toolText(t, r.only(t)) != "hi" || wire.LastFoldedString(r.only(t).Result) != "complete" {
				t.Errorf("tools/call with a task parameter: %d %s, want a complete result", r.status, r.body)
			}
			r = c.sessionless("2", "server/discover", nil)
			if m := r.only(t); m.Error != nil || strings.Contains(string(m.Result), "tasks") {
				t.Errorf("server/discover advertises tasks: %s", r.body)
			}
		})
	}
}

// A key gemgate removes before forwarding is refused in another case: a worker that reads
// keys without regard to case would take "Task" for "task".
func TestSessionlessTaskKeyInAnotherCaseRefused(t *testing.T) {
	f := newSessionlessFixture(t)
	for _, key := range []string{"Task", "TASK", "RequestState", "inputresponses"} {
		r := f.client("alice-rw").sessionless(`"k"`, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}, key: map[string]any{}})
		if m := r.only(t); r.status != http.StatusBadRequest || m.Error == nil || !strings.Contains(string(m.Error), "ambiguous") {
			t.Errorf("%s: %d %s, want 400 naming the ambiguous key", key, r.status, r.body)
		}
	}
}
