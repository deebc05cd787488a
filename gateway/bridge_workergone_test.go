package gateway

import (
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/gemgate/gemgate/pool"
)

// A parked call whose worker ended before the retry (it crashed, or was stopped) cannot be
// resumed, and the retry is told so: start the request again without the state, as for a
// state whose call is gone (docs/eras.md). It must not be told that the state "does not
// belong to this caller", the answer to another user's state, which sends a client to look
// for a token problem it does not have.
func TestSessionlessRetryAfterTheWorkerEndedSaysStartAgain(t *testing.T) {
	for _, exit := range []string{pool.ExitKeep, pool.ExitEnd} {
		t.Run(exit, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.Pool = pool.Settings{WorkerPer: pool.PerUser, OnWorkerExit: exit}
				o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
			})
			c := f.client("alice-rw")
			state, responses := parkDeleteNote(t, c)
			pid := 0
			for _, rec := range f.log.records(t) {
				if rec["msg"] == "worker started" {
					pid = int(rec["pid"].(float64))
				}
			}
			if pid == 0 {
				t.Fatalf("no worker started; log:\n%s", f.log.String())
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitLog(t, f, "worker ended on its own")
			r := c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
				"inputResponses": responses, "requestState": state})
			if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "start the request again") {
				t.Errorf("retry after the worker ended: %d %s, want 400 telling the client to start the request again", r.status, r.body)
			}
		})
	}
}
