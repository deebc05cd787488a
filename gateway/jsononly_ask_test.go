package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/pool"
)

// A call whose POST accepts only application/json cannot carry its worker's question, and
// with no GET stream nothing else can: the question must be answered by gemgate at once (an
// elicitation is cancelled), as one no session can take is, and the call goes on to its
// answer. Parked in the outbox for a GET stream that never comes, it held the call, its
// session (busy: never reaped) and the worker's question for as long as the client waited,
// and, request_timeout being off by default, for good.
func TestJSONOnlyCallsQuestionIsAnsweredWithoutAGetStream(t *testing.T) {
	for _, per := range []string{pool.PerSession, pool.PerUser} {
		t.Run(per, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: per} })
			c := f.client("alice-rw")
			openWithElicitation(t, c)
			if r := c.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
				t.Fatalf("write_note: %d %s", r.status, r.body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.do(ctx, http.MethodPost, rpcBody("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}}),
				"Accept", "application/json")
			if err != nil {
				t.Fatalf("delete_note with Accept: application/json and no GET stream got no answer: %v", err)
			}
			if got := toolText(t, r.only(t)); !strings.Contains(got, "not deleted") {
				t.Errorf("delete_note answered %q, want the note kept (gemgate cancels the confirmation)", got)
			}
			waitLog(t, f, `"msg":"audit worker request"`, `"method":"elicitation/create"`, `"answered_by":"gemgate"`,
				`"answer":"cancel"`, `"worker_read_only":false`)
		})
	}
}
