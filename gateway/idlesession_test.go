package gateway

import (
	"strings"
	"testing"
)

// An idle session is what a gateway holds thousands of: what it keeps must be what idling
// needs. Its call table is made at its first call, and its log lines still name the session,
// the user and the worker, each once.
func TestIdleSessionHoldsNoCallTable(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	st := c.openStream()
	t.Cleanup(st.cancel)
	s := c.sessionObj()
	s.mu.Lock()
	calls := s.calls
	s.mu.Unlock()
	if calls != nil {
		t.Errorf("an idle session holds a call table of %d entries; want none until its first call", len(calls))
	}
	if got := toolText(t, c.callTool("1", "echo", map[string]any{"text": "hi"}).only(t)); got != "hi" {
		t.Fatalf("echo after idling: %q", got)
	}
	if s.busy() {
		t.Error("the session is busy after its only call ended")
	}
	var opened string
	for l := range strings.SplitSeq(f.log.String(), "\n") {
		if strings.Contains(l, `"session opened"`) {
			opened = l
		}
	}
	for _, want := range []string{`"session":"` + s.id + `"`, `"user":"alice"`, `"worker":"` + s.member.WorkerID() + `"`} {
		key := want[:strings.Index(want, ":")+1]
		if strings.Count(opened, key) != 1 || !strings.Contains(opened, want) {
			t.Errorf("session opened line %q: want %s once", opened, want)
		}
	}
}
