package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// slowLogParams is a call of the demo's slow tool that sends one log line per tick, no progress.
func slowLogParams(seconds int) map[string]any {
	return map[string]any{"name": "slow", "arguments": map[string]any{"seconds": seconds, "log": true}}
}

// logLines are the data of the notifications/message among msgs, in order.
func logLines(t *testing.T, msgs []*jsonrpc.Message) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		if m.Method != "notifications/message" {
			continue
		}
		var p struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatalf("notifications/message params %s: %v", m.Params, err)
		}
		out = append(out, p.Data)
	}
	return out
}

// TestLogLinesRideTheirCallsStream: a log line the worker sends while a call runs goes on that
// call's own POST stream, before its answer; with post_answers: json, such a line turns the
// answer into a stream (README: "answers JSON unless the worker sends progress or log messages
// first"), and without it the answer stays JSON.
func TestLogLinesRideTheirCallsStream(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.PostAnswers = PostAnswersJSON })
	c := f.client("alice-rw")
	c.open()
	r := c.rpc(`"log-1"`, "tools/call", slowLogParams(2))
	if !strings.HasPrefix(r.contentType(), "text/event-stream") {
		t.Fatalf("a call that logged, with post_answers json: Content-Type %q, body %s; want its answer streamed with the log lines", r.contentType(), r.body)
	}
	if got, want := logLines(t, r.msgs), []string{"slow: 1 of 2 seconds", "slow: 2 of 2 seconds"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("log lines on the call's POST stream: %q, want %q", got, want)
	}
	if last := r.msgs[len(r.msgs)-1]; string(last.ID) != `"log-1"` || last.Result == nil {
		t.Errorf("the stream's last message is %s, want the call's answer", last.Encode())
	}
	// The same call without log lines is answered JSON.
	r = c.rpc(`"quiet"`, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 1}})
	if r.contentType() != "application/json" || len(r.msgs) != 1 {
		t.Errorf("a call that sent nothing before its answer, post_answers json: Content-Type %q, %d messages", r.contentType(), len(r.msgs))
	}
}

// TestLogLineOfOneSessionsCallStaysOffAnothersStream: two sessions of one user share a worker;
// a log line sent while the first session's call runs goes on that call's POST stream (once),
// and the second session, which has no call, gets its own copy on its own GET stream, never
// on the first session's call.
func TestLogLineOfOneSessionsCallStaysOffAnothersStream(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
	a, b := f.client("alice-rw"), f.client("alice-rw")
	a.open()
	b.open()
	if a.sessionObj().member.WorkerPid() != b.sessionObj().member.WorkerPid() {
		t.Fatal("the two sessions of one user do not share a worker")
	}
	bStream := b.openStream()
	r := a.rpc(`"a-log"`, "tools/call", slowLogParams(1))
	if r.status != http.StatusOK || !strings.HasPrefix(r.contentType(), "text/event-stream") {
		t.Fatalf("a's call: %d %q %s", r.status, r.contentType(), r.body)
	}
	if got := logLines(t, r.msgs); len(got) != 1 || got[0] != "slow: 1 of 1 seconds" {
		t.Errorf("log lines on a's POST stream: %q, want its call's one line once", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, ok := bStream.next(time.Until(deadline))
		if !ok {
			t.Fatal("b's GET stream never got its copy of the worker's log line: it went on another session's call")
		}
		if got := logLines(t, []*jsonrpc.Message{m}); len(got) == 1 {
			if got[0] != "slow: 1 of 1 seconds" {
				t.Fatalf("b's stream got log line %q", got[0])
			}
			break
		}
	}
}
