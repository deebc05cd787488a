package pool

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A client chooses the URIs it subscribes to, and gemgate keeps each: one session may be
// subscribed to at most MaxSubscriptionsPerCaller of them. One more is refused by gemgate,
// with a message that says why, and never reaches the worker; a URI it has already, or one
// after it lets another go, is taken; another session of the same worker has its own count;
// and a caller that goes leaves no count behind.
func TestSubscriptionsPerCallerAreBounded(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	sub := func(s *session, method, uri string) string {
		t.Helper()
		call, err := s.call(t, method, map[string]string{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		got := <-call.Result()
		if got.Error != nil {
			return string(got.Error)
		}
		return string(got.Result)
	}
	for i := range MaxSubscriptionsPerCaller {
		if got := sub(a, "resources/subscribe", fmt.Sprintf("u%d", i)); got != `{}` {
			t.Fatalf("subscribe %d: %s", i, got)
		}
	}
	heard := strings.Count(record(t, probe), "subscribe ")
	if got := sub(a, "resources/subscribe", "one-more"); !strings.Contains(got, "too many resource subscriptions") {
		t.Fatalf("subscription %d: %s, want refused", MaxSubscriptionsPerCaller+1, got)
	}
	if now := strings.Count(record(t, probe), "subscribe "); now != heard {
		t.Errorf("the refused subscribe reached the worker (%d lines, then %d)", heard, now)
	}
	if got := sub(a, "resources/subscribe", "u7"); got != `{}` {
		t.Errorf("a URI the session has already: %s", got)
	}
	if got := sub(b, "resources/subscribe", "one-more"); got != `{}` {
		t.Errorf("another session's first subscribe: %s", got)
	}
	if got := sub(a, "resources/unsubscribe", "u7"); got != `{}` {
		t.Fatalf("unsubscribe: %s", got)
	}
	if got := sub(a, "resources/subscribe", "one-more"); got != `{}` {
		t.Errorf("after letting one go: %s", got)
	}
	a.m.Detach()
	b.m.Detach()
	s := probe.m.slot()
	eventually(t, "no subscription left", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.w.subs) == 0 && len(s.w.subsOf) == 0
	})
}

// A subscribe or unsubscribe is counted by its params.uri as gemgate reads it, strictly.
// One whose URI gemgate cannot read as a string (params by position, a number, none) might
// be read otherwise by the worker: two callers asking for different things would then share
// one count, and the second be answered {} by gemgate for what the worker never heard. It is
// refused with -32602, never reaches the worker and counts nothing.
func TestUnreadableSubscribeURIIsRefused(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	for _, method := range []string{"resources/subscribe", "resources/unsubscribe"} {
		for _, params := range []string{`["u1"]`, `{"uri":5}`, `{"uri":null}`, `{}`, `{"uri":{"u":"u1"}}`} {
			id := json.RawMessage(`"x"`)
			c, err := a.m.Call(t.Context(), Request{Message: &jsonrpc.Message{ID: id, Method: method, Params: json.RawMessage(params)}, Identity: a.id})
			if err != nil {
				t.Fatal(err)
			}
			if got := within(c); got == nil || !strings.Contains(string(got.Error), "-32602") || string(got.ID) != `"x"` {
				t.Fatalf("%s %s: %s, want -32602 with its id", method, params, show(got))
			}
		}
	}
	if heard := record(t, a); heard != "" {
		t.Errorf("the worker heard %q", heard)
	}
	s := a.m.slot()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.w.subs)+len(s.w.subsOf)+len(s.w.subPending) != 0 {
		t.Errorf("gemgate counts %v", s.w.subs)
	}
}
