package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/pool"
)

// A read-only session of a worker that keeps the user's login (Settings.SessionsOnly, as
// GemStone's) never steps up: a token with the write scope ends it (step_up, 404). The 403 for
// a tool that can change state says so, instead of promising the call on this session.
func TestReadOnlyRefusalPromisesNoStepUpWhereTheSessionEnds(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerSession, SessionsOnly: "the worker keeps its login between calls"}
	})
	c := f.client("alice-ro")
	c.open()
	r := c.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"})
	forbiddenBody(t, r, "2", "readOnly")
	msg := string(r.body)
	if strings.Contains(msg, "on this session too") || !strings.Contains(msg, "new session") {
		t.Errorf("403 on a session that a write token ends: %s; want it to send the client to a new session", msg)
	}
	c.token = "alice-rw"
	if r := c.callTool("3", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusNotFound {
		t.Fatalf("a write token on the read-only session: %d %s, want 404 (step_up)", r.status, r.body)
	}
}
