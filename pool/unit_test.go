package pool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Calls waiting for a turn are served round robin across callers: one caller's backlog does
// not hold up another's single call.
func TestFairQueueIsRoundRobinAcrossCallers(t *testing.T) {
	a, b, c := &Member{}, &Member{}, &Member{}
	var q fairQueue
	mk := func(m *Member, id string) *Call { return &Call{m: m, out: jsonrpc.Message{ID: json.RawMessage(id)}} }
	for i := range 3 {
		q.push(mk(a, fmt.Sprintf(`"a%d"`, i)))
	}
	q.push(mk(b, `"b0"`))
	removed := mk(c, `"c0"`)
	q.push(removed)
	q.push(mk(c, `"c1"`))
	if !q.remove(removed) || q.remove(removed) {
		t.Fatal("remove: a queued call is removed once")
	}
	var got []string
	for x := q.pop(); x != nil; x = q.pop() {
		got = append(got, string(x.out.ID))
	}
	want := []string{`"a0"`, `"b0"`, `"c1"`, `"a1"`, `"a2"`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order %v, want %v", got, want)
	}
	if q.len() != 0 {
		t.Errorf("len %d after draining", q.len())
	}
}

func TestSettingsValidateAndDefaults(t *testing.T) {
	if err := (Settings{WorkerPer: "team", OnWorkerExit: "maybe", MaxWorkers: -1}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "worker_per") || !strings.Contains(err.Error(), "on_worker_exit") || !strings.Contains(err.Error(), "max_workers") {
		t.Errorf("Validate = %v", err)
	}
	d := Settings{}.withDefaults()
	if d.WorkerPer != PerUser || d.IdleTimeout != 10*time.Minute || d.MaxCallsPerWorker != 64 || d.OnWorkerExit != ExitKeep || d.Concurrency != 0 {
		t.Errorf("defaults %+v", d)
	}
	if s := (Settings{WorkerPer: PerSession, OnWorkerExit: ExitKeep}).withDefaults(); s.OnWorkerExit != ExitEnd {
		t.Errorf("a per-session worker's exit must end its session, got %q", s.OnWorkerExit)
	}
}

// Two callers' progress token 1 become distinct worker tokens, and each comes back as sent.
func TestProgressTokensAreRemappedAndRestored(t *testing.T) {
	params := json.RawMessage(`{"name":"slow","_meta":{"progressToken":1}}`)
	out, err := rewriteProgress(params, "gemgate-p7")
	if err != nil || !bytes.Contains(out, []byte(`"progressToken":"gemgate-p7"`)) || !bytes.Contains(out, []byte(`"name":"slow"`)) {
		t.Fatalf("rewrite: %s %v", out, err)
	}
	tok, ok := workerToken(json.RawMessage(`{"progressToken":"gemgate-p7","progress":1}`))
	if !ok || tok != "gemgate-p7" {
		t.Fatalf("workerToken = %q %v", tok, ok)
	}
	if _, ok := workerToken(json.RawMessage(`{"progressToken":"gemgate-p7","ProgressToken":"x"}`)); ok {
		t.Error("an ambiguous token was routed")
	}
	back, err := withField(json.RawMessage(`{"progressToken":"gemgate-p7","progress":1}`), "progressToken", json.RawMessage(`1`))
	if err != nil || !bytes.Contains(back, []byte(`"progressToken":1`)) {
		t.Errorf("restore: %s %v", back, err)
	}
}

func TestLogLevels(t *testing.T) {
	cases := []struct {
		params string
		want   int
	}{
		{`{"level":"debug"}`, 0}, {`{"level":"error"}`, 4}, {`{"level":"loud"}`, 7}, {`{"level":"debug","Level":"error"}`, 7},
	}
	for _, c := range cases {
		if got := LevelOf(json.RawMessage(c.params)); got != c.want {
			t.Errorf("LevelOf(%s) = %d, want %d", c.params, got, c.want)
		}
	}
}

func TestClientCapabilities(t *testing.T) {
	c := ClientCapabilities(json.RawMessage(`{"capabilities":{"elicitation":{},"roots":{"listChanged":true}}}`))
	if c.Sampling || !c.Elicitation || !c.Roots {
		t.Errorf("caps %+v", c)
	}
	if !c.allows("ping") || c.allows("sampling/createMessage") || !c.allows("elicitation/create") {
		t.Error("allows")
	}
}

// A session's capability is declared when its member of capabilities is an object, as a go-sdk
// server reads it and as gemgate reads a 2026-07-28 request's clientCapabilities: a client
// that wrote "elicitation": null (or false) declared nothing, and is not asked.
func TestClientCapabilityIsDeclaredByAnObject(t *testing.T) {
	for _, v := range []string{`null`, `false`, `true`, `0`, `"yes"`, `[]`} {
		c := ClientCapabilities(json.RawMessage(`{"capabilities":{"sampling":` + v + `,"elicitation":` + v + `,"roots":` + v + `}}`))
		if c.Sampling || c.Elicitation || c.Roots {
			t.Errorf("capabilities of %s each: %+v, want none declared", v, c)
		}
	}
	if c := ClientCapabilities(json.RawMessage(`{"capabilities":{"sampling": {} ,"elicitation":{"form":{}},"roots":	{}}}`)); !c.Sampling || !c.Elicitation || !c.Roots {
		t.Errorf("capabilities of objects: %+v, want all declared", c)
	}
}
