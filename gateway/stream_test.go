package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

func slowParams(seconds int, progress bool, token any) map[string]any {
	p := map[string]any{"name": "slow", "arguments": map[string]any{"seconds": seconds, "progress": progress}}
	if token != nil {
		p["_meta"] = map[string]any{"progressToken": token}
	}
	return p
}

func TestProgressMakesAnSSEAnswer(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	r := c.rpc(`"s-1"`, "tools/call", slowParams(2, true, "tok-1"))
	if r.status != http.StatusOK || !strings.HasPrefix(r.contentType(), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q", r.status, r.contentType())
	}
	type progress struct {
		ProgressToken any     `json:"progressToken"`
		Progress      float64 `json:"progress"`
	}
	var got []progress
	for _, m := range r.msgs[:len(r.msgs)-1] {
		if m.Method != "notifications/progress" {
			t.Fatalf("unexpected message before the answer: %s", m.Encode())
		}
		var p progress
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	want := []progress{{"tok-1", 1}, {"tok-1", 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress events (-want +got):\n%s", diff)
	}
	last := r.msgs[len(r.msgs)-1]
	if string(last.ID) != `"s-1"` || !strings.Contains(toolText(t, last), "done after 2 seconds") {
		t.Errorf("last event is not the answer: %s", last.Encode())
	}

	// Without related messages the answer is still an SSE stream for a client that accepts
	// one (as the reference servers answer), and plain JSON for one that does not.
	r = c.callTool("2", "echo", map[string]any{"text": "plain"})
	if !strings.HasPrefix(r.contentType(), "text/event-stream") || toolText(t, r.only(t)) != "plain" {
		t.Errorf("echo: Content-Type %q, body %s", r.contentType(), r.body)
	}
	r = c.post(rpcBody("3", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "json"}}), "Accept", "application/json")
	if r.contentType() != "application/json" || toolText(t, r.only(t)) != "json" {
		t.Errorf("echo for a JSON-only client: Content-Type %q, body %s", r.contentType(), r.body)
	}
}

func TestPostAnswersJSON(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.PostAnswers = PostAnswersJSON })
	c := f.client("alice-rw")
	c.open()
	r := c.callTool("2", "echo", map[string]any{"text": "plain"})
	if r.contentType() != "application/json" || toolText(t, r.only(t)) != "plain" {
		t.Errorf("echo: Content-Type %q, body %s", r.contentType(), r.body)
	}
	// Related messages still turn the answer into a stream.
	r = c.rpc(`"s-1"`, "tools/call", slowParams(1, true, "tok-1"))
	if !strings.HasPrefix(r.contentType(), "text/event-stream") || len(r.msgs) < 2 {
		t.Errorf("progress with post_answers=json: Content-Type %q, %d messages", r.contentType(), len(r.msgs))
	}
}

func TestCancelledCallGets202AndReachesWorker(t *testing.T) {
	for _, progress := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[progress], func(t *testing.T) {
			f := newFixture(t)
			c := f.client("alice-rw")
			c.open()
			s := c.sessionObj()
			answer := make(chan reply, 1)
			errc := make(chan error, 1)
			go func() {
				r, err := c.do(context.Background(), http.MethodPost, rpcBody("21", "tools/call", slowParams(30, progress, 7)))
				answer <- r
				errc <- err
			}()
			eventually(t, 5*time.Second, "the call to be in flight", s.inCall)
			// In flight at the gateway is not yet running at the worker: a cancel that overtakes
			// the call's start would find nothing to cancel there.
			eventually(t, 15*time.Second, "the worker to start the call", func() bool {
				return strings.Contains(f.log.String(), "slow: started")
			})
			if progress {
				eventually(t, 5*time.Second, "a progress event", func() bool {
					return strings.Contains(f.log.String(), `notifications/progress`)
				})
			}
			r := c.rpc("", "notifications/cancelled", map[string]any{"requestId": 21, "reason": "test"})
			if r.status != http.StatusAccepted {
				t.Fatalf("cancel: status %d", r.status)
			}
			var got reply
			select {
			case got = <-answer:
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the cancelled POST did not end")
			}
			for _, m := range got.msgs {
				if m.IsResponse() {
					t.Errorf("the cancelled call was answered: %s", m.Encode())
				}
			}
			if !progress && (got.status != http.StatusAccepted || len(got.body) != 0) {
				t.Errorf("cancelled POST: status %d body %q, want 202 and no body", got.status, got.body)
			}
			eventually(t, 5*time.Second, "the worker to see the cancel", func() bool {
				return strings.Contains(f.log.String(), "slow: cancelled")
			})
			// The worker's late answer (the demo answers a cancelled call with an error) goes
			// nowhere: the pool, which counted the call at the worker until then (a worker may
			// ask the client something for a call it was told to cancel), takes it and drops it,
			// and it never reaches the session stream.
			eventually(t, 10*time.Second, "the worker's late answer to arrive and be dropped", func() bool {
				return strings.Contains(f.log.String(), "worker answered a call its client gave up; the answer is dropped")
			})
			msgs, _, _ := outboxTake(s.outbox, s.outbox.Current())
			for _, m := range msgs {
				if strings.Contains(string(m), `"id":21`) {
					t.Errorf("late answer reached the outbox: %s", m)
				}
			}
			if s.inCall() {
				t.Error("the cancelled call is still registered")
			}
			if r := c.callTool("22", "echo", map[string]any{"text": "after"}); toolText(t, r.only(t)) != "after" {
				t.Error("session unusable after a cancel")
			}
		})
	}
}

func TestDuplicateInFlightID(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	s := c.sessionObj()
	first := make(chan reply, 1)
	go func() {
		r, _ := c.do(context.Background(), http.MethodPost, rpcBody(`"dup"`, "tools/call", slowParams(30, false, nil)))
		first <- r
	}()
	eventually(t, 5*time.Second, "the call to be in flight", s.inCall)
	r := c.callTool(`"dup"`, "echo", map[string]any{"text": "x"})
	m := r.only(t)
	if e := rpcError(t, m); e.Code != jsonrpc.CodeInvalidRequest || string(m.ID) != `"dup"` {
		t.Errorf("duplicate id: %+v id %s", e, m.ID)
	}
	c.rpc("", "notifications/cancelled", map[string]any{"requestId": "dup"})
	select {
	case r := <-first:
		if r.status != http.StatusAccepted {
			t.Errorf("first call after cancel: %d", r.status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("first call never ended")
	}
}

func TestGetStreamCarriesServerMessages(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	st := c.openStream()
	if r := c.callTool("3", "toggle_extra_tool", map[string]any{}); r.only(t).Error != nil {
		t.Fatalf("toggle_extra_tool: %s", r.body)
	}
	for {
		m, ok := st.next(5 * time.Second)
		if !ok {
			t.Fatal("no list_changed on the GET stream")
		}
		if m.Method == "notifications/tools/list_changed" {
			break
		}
	}
	// The newest stream wins: the first one ends.
	st2 := c.openStream()
	if !st.ended(2 * time.Second) {
		t.Error("the superseded stream did not end")
	}
	// DELETE ends the current one.
	if r := c.request(context.Background(), http.MethodDelete, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d", r.status)
	}
	if !st2.ended(2 * time.Second) {
		t.Error("the stream outlived its session")
	}
}

// outboxTake is o.TakeLogged's messages without their event ids: what a stream would be sent.
func outboxTake(o *wire.Outbox, gen uint64) ([][]byte, <-chan struct{}, bool) {
	evs, wake, ok := o.TakeLogged(gen)
	var msgs [][]byte
	for _, e := range evs {
		msgs = append(msgs, e.Data)
	}
	return msgs, wake, ok
}

// A GET stream resumed with Last-Event-ID traces what it replays, as a live stream and a
// resumed POST stream trace what they send: with the message trace on, every message the
// client is sent has its gateway_to_client line, the second sending of one included.
func TestResumedGetStreamTracesItsReplay(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	ctx, cut := context.WithCancel(context.Background())
	defer cut()
	req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", err, resp)
	}
	evs := readEvents(resp.Body)
	nextEvent(t, evs)      // the priming event
	var changed []rawEvent // the two list_changed events, each with its id
	for i, id := range []string{"3", "4"} {
		if r := c.callTool(id, "toggle_extra_tool", map[string]any{}); r.only(t).Error != nil {
			t.Fatalf("toggle_extra_tool: %s", r.body)
		}
		for len(changed) == i {
			ev, ok := nextEvent(t, evs)
			if !ok {
				t.Fatal("the GET stream ended")
			}
			if strings.Contains(ev.data, "notifications/tools/list_changed") {
				changed = append(changed, ev)
			}
		}
	}
	cut()
	resp.Body.Close()
	traced := func() int {
		n := 0
		for _, rec := range f.log.records(t) {
			if body, _ := rec["body"].(string); rec["msg"] == "trace" && rec["direction"] == "gateway_to_client" &&
				strings.Contains(body, "notifications/tools/list_changed") {
				n++
			}
		}
		return n
	}
	if n := traced(); n != 2 {
		t.Fatalf("%d gateway_to_client trace lines of list_changed before the resumption, want 2", n)
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	gresp := c.resumeStream(ctx2, changed[0].id)
	defer gresp.Body.Close()
	gevs := readEvents(gresp.Body)
	for {
		ev, ok := nextEvent(t, gevs)
		if !ok {
			t.Fatal("the resumed stream ended before its replay")
		}
		if ev.id == changed[1].id {
			if ev.data != changed[1].data {
				t.Fatalf("replayed %q, want %q", ev.data, changed[1].data)
			}
			break
		}
	}
	if n := traced(); n != 3 {
		t.Errorf("%d gateway_to_client trace lines of list_changed after the replay, want 3 (the replay traced)", n)
	}
}

// A GET whose gates pass just before its session ends (the reaper's stream_lost verdict as
// the client reconnects, or a DELETE racing it) attaches its stream to the ended session's
// outbox: it must end at once, as a stream open at the end does, and not stay open for good on
// a session that is gone, its keepalives telling the client all is well. The test runs
// handleGet's steps with the session's end between them.
func TestGetStreamAttachedAfterItsSessionEndedEnds(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	returned := make(chan struct{})
	srv := httptest.NewServer(f.gw.opts.Authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		s, _, after, resumed := f.gw.streamRequest(w, r)
		if s == nil {
			t.Error("the GET was refused before its session ended")
			return
		}
		if !f.gw.endSession(s, "deleted") {
			t.Error("the session did not end")
			return
		}
		f.gw.serveStream(w, r.Context().Done(), nil, s, after, resumed)
	})))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(headerSessionID, c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	select {
	case <-returned:
	case <-time.After(3 * time.Second):
		t.Errorf("the GET stream attached after its session ended is still open 3 s later (status %d); want it ended at once", resp.StatusCode)
	}
}
