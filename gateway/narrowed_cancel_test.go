package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReadOnlyTokenCancelsItsOwnCall: on a read-write session, a read-only token may cancel
// the call it made itself with read-only access (narrowed.go: "a read-only token may cancel
// its own call"): the cancel is taken (202), reaches the worker and ends the call. A cancel of
// an id not in flight is refused as any other notification of that token is (403), and never
// brings the handler down.
func TestReadOnlyTokenCancelsItsOwnCall(t *testing.T) {
	f := newFixture(t)
	rw := f.client("alice-rw")
	rw.open()
	if rw.sessionObj().currentAccess().ReadOnly {
		t.Fatal("the session opened with the read-write token is read-only")
	}
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	answer := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := ro.do(ctx, http.MethodPost, rpcBody(`"ro-slow"`, "tools/call", slowParams(30, false, nil)), "Accept", "application/json")
		answer <- err
	}()
	eventually(t, 15*time.Second, "the worker to start the read-only call", func() bool {
		return strings.Contains(f.log.String(), "slow: started")
	})

	// An id not in flight: refused, and the gateway still answers.
	if r := ro.refused(t, "a read-only token's cancel of no call", http.MethodPost,
		rpcBody("", "notifications/cancelled", map[string]any{"requestId": "no-such-call", "reason": "test"})); r.status != http.StatusForbidden {
		t.Errorf("a read-only token's cancel of an id not in flight on a read-write session: %d, want 403", r.status)
	}

	if r := ro.rpc("", "notifications/cancelled", map[string]any{"requestId": "ro-slow", "reason": "test"}); r.status != http.StatusAccepted {
		t.Fatalf("the read-only token's cancel of its own read-only call: %d %s, want 202", r.status, r.body)
	}
	select {
	case err := <-answer:
		if err != nil {
			t.Fatalf("the cancelled call's POST: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled read-only call's POST did not end")
	}
	eventually(t, 10*time.Second, "the worker to see the cancel", func() bool {
		return strings.Contains(f.log.String(), "slow: cancelled")
	})
}
